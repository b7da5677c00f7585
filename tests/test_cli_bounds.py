"""Work beyond what the machine can finish is refused up front, with the bound named; long work shows
progress counted by the work itself; every command's --seed follows one rule.

In process (``netlab.cli.main`` with argv, capsys): exit status 2 and one line on stderr naming the
flag, no traceback. The bounds are ``netlab.cli.congestion``'s MAX_SENDERS and MAX_EVENTS (an
estimate of the packet model's events: senders x packets a block x rounds x events a packet).
"""
import pytest

from netlab import cli, validate
from netlab.cli import congestion as ccli
from netlab.fabric import Congestion, Incast, incast


def one_line_naming(capsys, argv, flag):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"netlab {argv[0]}: error: {flag}: "), err
    return lines[0]


@pytest.mark.parametrize("argv, flag, bound", [
    (["congestion", "incast", "--senders", "100000"], "senders", f"{ccli.MAX_SENDERS}"),
    (["congestion", "incast", "--block", "1T"], "block", f"{ccli.MAX_EVENTS:.3g}"),
    (["congestion", "incast", "--rounds", "100000000"], "rounds", f"{ccli.MAX_EVENTS:.3g}"),
    (["congestion", "jitter", "--rounds", "100000000"], "rounds", f"{ccli.MAX_EVENTS:.3g}"),
    (["congestion", "incast", "--transport", "dcqcn", "--block", "64M"], "block", f"{ccli.MAX_EVENTS:.3g}"),
    (["congestion", "incast", "--transport", "nscc", "--rounds", "100000000"], "rounds", f"{ccli.MAX_EVENTS:.3g}"),
    (["congestion", "incast", "--transport", "rccc", "--senders", "5000"], "senders", f"{ccli.MAX_SENDERS}"),
])
def test_work_beyond_the_bound_is_refused_at_once_naming_the_flag_and_the_bound(capsys, argv, flag, bound):
    line = one_line_naming(capsys, argv, flag)
    assert bound in line


def test_the_estimate_counts_every_packet_of_every_round_and_transport():
    class Args:
        senders, experiment = 16, "jitter"
    # 16 x ceil(256 KiB / 1500 B) = 16 x 175 packets a round; 5 events a packet for reno and dctcp, 100 for dcqcn
    assert ccli.check_work(Args, 256 * 1024, 40, ["reno", "dctcp", "dcqcn"]) == 16 * 175 * 40 * (5 + 5 + 100)


def test_the_chapters_default_commands_fit_the_bound(capsys):
    assert cli.main(["congestion", "incast", "--rounds", "2", "--json"]) == 0
    capsys.readouterr()
    class Args:
        senders, experiment = 16, "incast"
    assert ccli.check_work(Args, 256 * 1024, 20, ["dcqcn"]) <= ccli.MAX_EVENTS      # the default incast, RoCE
    Args.experiment = "jitter"
    assert ccli.check_work(Args, 256 * 1024, 40, ["reno", "dctcp", "dcqcn"]) <= ccli.MAX_EVENTS


def test_progress_is_the_receivers_bytes_rising_to_the_whole_payload():
    seen = []
    run = incast(Incast(senders=16, block=256 * 1024, rounds=3, bandwidth=1e9 / 8,
                        switch=Congestion("reno", buffer=64 * 1024, rto_min=0.2)), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 16 * 256 * 1024 * 3 == run.payload
    assert len(seen) > 5                                         # it moved before the end
    plain = incast(Incast(senders=16, block=256 * 1024, rounds=3, bandwidth=1e9 / 8,
                          switch=Congestion("reno", buffer=64 * 1024, rto_min=0.2)))
    assert plain.engine.events == run.engine.events and list(plain.step_times) == list(run.step_times)   # the same run


def test_a_run_stopped_at_its_event_budget_is_refused_naming_rounds(capsys, monkeypatch):
    monkeypatch.setattr(ccli.settings, "STOP_EVENTS", 2000)
    line = one_line_naming(capsys, ["congestion", "incast", "--rounds", "3"], "rounds")
    assert "0 of 3 rounds" in line and "2,000 events" in line


SEEDED = [["congestion", "incast"], ["congestion", "jitter"], ["sim", "allreduce"], ["ps"], ["compress"],
          ["assignment", "nbgrader", "/nonexistent-course"], ["grade", "/nonexistent-submissions"]]


@pytest.mark.parametrize("command", SEEDED, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("seed", ["-1", str(validate.SEED_MAX + 1)])
def test_every_command_refuses_a_seed_by_the_same_rule(capsys, command, seed):
    line = one_line_naming(capsys, [*command, "--seed", seed], "seed")
    with pytest.raises(ValueError) as rule:
        validate.seed(int(seed))
    assert line.endswith(str(rule.value))
    assert f"from 0 to {validate.SEED_MAX}," in line


@pytest.mark.parametrize("value", [True, False])
def test_flag_takes_a_bool_as_it_is(value):
    assert validate.flag(value, "trim") is value


@pytest.mark.parametrize("bad", [1, 0, "yes", "True", None, 1.0])
def test_flag_refuses_what_only_looks_like_a_bool_naming_the_parameter(bad):
    with pytest.raises(ValueError, match=r"^trim: must be True or False, got "):
        validate.flag(bad, "trim")


def test_instance_returns_the_value_and_refuses_another_type_naming_the_parameter():
    from netlab.fabric.storm import Storm
    storm = Storm(0, 0.5)
    assert validate.instance(storm, "storm", Storm, "a netlab.fabric.storm.Storm") is storm
    assert validate.instance("star", "topology", (str, Storm), "a name or a Storm") == "star"
    with pytest.raises(ValueError, match=r"^storm: must be a netlab\.fabric\.storm\.Storm, got 'storm'$"):
        validate.instance("storm", "storm", Storm, "a netlab.fabric.storm.Storm")
    with pytest.raises(ValueError, match=r"^topology: must be a name or a Storm, got 3$"):
        validate.instance(3, "topology", (str, Storm), "a name or a Storm")


def test_the_settings_refuse_a_wrong_type_or_a_non_bool_flag_through_validate():
    with pytest.raises(ValueError, match=r"^trim: must be True or False, got 1$"):
        Congestion("nscc", buffer="64K", trim=1)
    with pytest.raises(ValueError, match=r"^storm: must be a netlab\.fabric\.storm\.Storm, got 'x'$"):
        Congestion("dcqcn", storm="x")
    with pytest.raises(ValueError, match=r"^transport: must be one of "):
        Congestion("tcp-vegas")
