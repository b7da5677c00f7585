"""``netlab congestion``: the JSON a script reads, and one clear line with exit 2 for bad input."""
import json
import subprocess
import sys

import pytest

from netlab.cli import main


def test_incast_json_reports_goodput_completion_drops_timeouts_marks_pauses(capsys):
    assert main(["congestion", "incast", "--senders", "4", "--block", "64K", "--bandwidth", "1Gbit/s",
                 "--buffer", "64K", "--transport", "reno", "--rto-min", "200ms", "--rounds", "2", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    for key in ("goodput_Bps", "drops", "timeouts", "marks", "pause_s"):
        assert key in row
    assert set(row["completion_s"]) >= {"p50", "p99"}
    assert 0 < row["goodput_Bps"] <= 1e9 / 8 and row["rounds"] == 2


def test_pfc_run_pauses_and_never_drops(capsys):
    assert main(["congestion", "incast", "--senders", "4", "--block", "256K", "--transport", "ideal",
                 "--pfc", "--rounds", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["drops"] == 0 and row["pause_s"] > 0
    assert row["completion_s"]["p50"] == pytest.approx(4 * 256 * 1024 / (1e9 / 8), rel=0.01)


@pytest.mark.parametrize("args, name", [
    (["--buffer=-1K"], "buffer"), (["--ecn-kmin", "10K", "--ecn-kmax", "5K"], "ecn-kmin"),
    (["--ecn-pmax", "0"], "ecn-pmax"), (["--ecn-pmax", "1.5"], "ecn-pmax"), (["--transport", "vegas"], "transport"),
    (["--pfc", "--xoff", "100K"], "xoff"), (["--pfc", "--buffer", "8K"], "pfc"), (["--pfc", "--xoff", "60K"], "pfc"),
    (["--rto-min", "0"], "rto-min"), (["--senders", "0"], "senders"),
])
def test_bad_input_is_one_line_naming_the_parameter_exit_2(args, name, capsys):
    assert main(["congestion", "incast", "--rounds", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"netlab congestion: error: {name}:"), err


@pytest.mark.slow
def test_bad_input_from_the_shell_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "netlab", "congestion", "incast", "--pfc", "--xoff", "60K"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == proc.stderr.strip().splitlines()[0].strip() and "pfc:" in proc.stderr


@pytest.mark.parametrize("args, name", [
    (["jitter", "--real-steps", "--transport", "cubic"], "transport"),
    (["jitter", "--real-steps", "--ranks", "0"], "ranks"),
    (["jitter", "--real-steps", "--steps", "1"], "steps"),
    (["jitter", "--real-steps", "--background", "1.5"], "background"),
    (["jitter", "--real-steps", "--latency", "-1us"], "latency"),
    (["jitter", "--real-steps", "--buffer", "4K", "--transport", "reno,dcqcn"], "buffer"),
    (["jitter", "--real-steps", "--senders", "4"], "real-steps"),
    (["jitter", "--real-steps", "--pfc"], "real-steps"),
    (["incast", "--real-steps"], "real-steps"),
    (["jitter", "--ranks", "3"], "ranks"),
])
def test_real_steps_bad_input_is_one_line_naming_the_parameter_before_any_rank_starts(args, name, run_cli):
    from netlab.runtime import shared
    before = shared._default
    code, out, err = run_cli("congestion", *args)
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"netlab congestion: error: {name}:"), lines
    assert shared._default is before                        # refused before the rank pool was touched


@pytest.mark.slow
def test_real_steps_from_the_shell_print_each_transports_step_times_as_the_library_measures_them():
    from netlab.cosim.experiments import step_jitter
    proc = subprocess.run([sys.executable, "-m", "netlab", "congestion", "jitter", "--real-steps", "--ranks", "2",
                           "--steps", "3", "--transport", "reno,dcqcn", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert list(rows) == ["reno", "dcqcn"]
    # virtual time is deterministic: the same training run in this process is the reference
    ref = step_jitter(transports=("reno", "dcqcn"), ranks=2, steps=3)
    for name, row in rows.items():
        assert row["times_s"] == pytest.approx(list(ref[name]["times"]), rel=1e-12)
        assert (row["p50"], row["p99"], row["max"]) == pytest.approx((ref[name]["p50"], ref[name]["p99"],
                                                                      ref[name]["max"]), rel=1e-12)
        assert row["max"] == max(row["times_s"]) and row["fabric"]["drops"] == ref[name]["fabric"]["drops"]


@pytest.mark.parametrize("args, name", [
    (["incast", "--real", "--pfc"], "real"), (["incast", "--real", "--window", "32K"], "real"),
    (["incast", "--real", "--background", "0.2"], "real"), (["incast", "--real", "--real-steps"], "real"),
    (["jitter", "--real"], "real"), (["incast", "--real", "--ranks", "2"], "ranks"),
    (["incast", "--real", "--ecn-kmin", "5K", "--ecn-kmax", "10K"], "ecn-kmin"),
    (["incast", "--real", "--buffer=-1K"], "buffer"), (["incast", "--real", "--senders", "0"], "senders"),
    (["incast", "--real", "--rto-min", "0"], "rto-min"), (["incast", "--real", "--nic-rate", "fast"], "nic-rate"),
    (["incast", "--nic-rate", "veth"], "nic-rate"),
])
def test_real_bad_input_is_one_line_naming_the_parameter_before_any_namespace(args, name, run_cli, monkeypatch):
    from netlab.linuxnet import netns
    monkeypatch.setattr(netns.Testbed, "__enter__", lambda self: pytest.fail("a testbed was built"))
    code, out, err = run_cli("congestion", *args, "--rounds", "1")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
    assert lines[0].startswith(f"netlab congestion: error: {name}:"), lines


def test_real_where_the_machine_cannot_is_one_line_saying_why(run_cli, monkeypatch):
    from netlab.linuxnet import linux
    monkeypatch.setattr(linux, "available", lambda: (False, "the real Linux network needs root (network namespaces)"))
    code, out, err = run_cli("congestion", "incast", "--real", "--rounds", "1")
    assert code == 2 and out == ""
    assert err.strip() == "netlab congestion: error: real: the real Linux network needs root (network namespaces)"


def _linux_ok() -> bool:
    from netlab.linuxnet import linux
    return linux.available()[0]


@pytest.mark.skipif(not _linux_ok(), reason="the real Linux network needs root and network namespaces")
def test_real_incast_reports_the_kernels_rounds_with_the_models_keys(run_cli):
    """4 senders x 64 KiB through the kernel's cubic into a 100 Mbit/s port with a 4 MB queue: nothing drops,
    no RTO, and a round takes the ideal N x block x 1514/1448 / B (the wire's frames) within 25 %."""
    code, out, err = run_cli("congestion", "incast", "--real", "--senders", "4", "--block", "64K", "--bandwidth",
                             "100Mbit/s", "--buffer", "4M", "--transport", "cubic", "--rounds", "4", "--json")
    assert code == 0, err
    row = json.loads(out)
    for key in ("goodput_Bps", "drops", "timeouts", "marks", "pause_s"):
        assert key in row
    ideal = 4 * 64 * 1024 * 1514 / 1448 / (100e6 / 8)
    assert row["drops"] == 0 and row["timeouts"] == 0 and row["pause_s"] == 0 and row["rounds"] == 4
    assert row["completion_s"]["p50"] == pytest.approx(ideal, rel=0.25)
    assert row["engine"] == "linux" and row["transport"] == "cubic"
