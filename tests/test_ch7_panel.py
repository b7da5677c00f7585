"""Chapter 7's panel runs headless: its numbers are measure_step's, every control changes the figure,
settings that mean nothing are greyed out and settings that cannot run are refused in one line."""
import re

import pytest

from netlab.observe import analysis
from netlab.dataparallel.step import measure_step
from netlab.ui.ch7 import CAPS, Ch7Panel, predicted_curve

SHAPE = dict(width=128, layers=3, batch=64)         # smaller than the chapter's: quicker, same code path
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
TIME = r"(\d+\.\d+ (?:s|ms|us|ns))"


def agrees(shown: str, seconds: float) -> bool:
    """A time as the panel printed it ("3.632 ms") is `seconds` rounded to its last printed digit."""
    number, unit = shown.split()
    half_digit = 0.5 * 10 ** -len(number.split(".")[1]) * UNITS[unit]
    return abs(float(number) * UNITS[unit] - seconds) <= half_digit * (1 + 1e-9)


def step_readout(text: str) -> dict:
    """The step line of the panel's text, read back: step, compute, communication, exposed (as printed)."""
    m = re.search(rf"step {TIME}: compute {TIME}, communication {TIME}, of it exposed {TIME}", text)
    assert m, text
    return dict(zip(("step", "compute", "comm", "exposed"), m.groups()))


def rank_rows(text: str) -> dict:
    """The scenario view's table read back: rank -> (compute, exposed comm, idle) as printed."""
    return {int(m[1]): m.groups()[1:] for m in re.finditer(rf"^\s+(\d+)\s+{TIME}\s+{TIME}\s+{TIME}", text, re.M)}


def png(panel):
    shown = [o["data"]["image/png"] for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(shown) == 1                                      # one figure, replaced, never appended
    return shown[0]


def test_the_panel_shows_what_measure_step_measures_for_the_same_setting():
    panel = Ch7Panel(ranks=3, bucket=20_000, overlap=True, bandwidth="1Gbit/s", latency="20us", shape=SHAPE)
    ref = measure_step(ranks=3, bucket=20_000, overlap=True, bandwidth="1Gbit/s", latency="20us", **SHAPE)
    got = panel.last
    assert got.total_s == ref.total_s and got.compute_s == ref.compute_s and got.comm_s == ref.comm_s
    worst = max(analysis.breakdown(ref.trace), key=lambda row: row["exposed_comm_s"])   # read independently
    assert got.setup["exposed_comm_s"] == pytest.approx(worst["exposed_comm_s"], rel=1e-12)
    shown = step_readout(panel.text)
    for key, value in (("step", ref.total_s), ("compute", ref.compute_s), ("comm", ref.comm_s),
                       ("exposed", worst["exposed_comm_s"])):
        assert agrees(shown[key], value), (key, shown[key], value)
    assert f"overlap fraction {worst['overlap_frac']:.0%}" in panel.text


@pytest.mark.slow
def test_every_control_changes_the_figure():
    panel = Ch7Panel(ranks=2, bucket=20_000, bandwidth="1Gbit/s", latency="20us", shape=SHAPE)
    changes = dict(bucket=10**12, overlap=False, ranks=3, bandwidth="10Gbit/s", latency="100us")
    for name, value in changes.items():
        before, runs = png(panel), panel.runs
        panel.set(**{name: value})
        assert panel.runs == runs + 1 and panel.error is None, panel.text
        assert png(panel) != before, f"{name}: the figure did not change"
    assert panel.last.setup["overlap"] is False and panel.last.ranks == 3


def test_the_drawn_curve_agrees_with_the_measured_steps():
    """The curve is the alpha-beta pipeline; at each cap it must match a step measured on real ranks."""
    caps = [c for _, c in CAPS]
    for overlap in (True, False):
        curve = predicted_curve(3, "1Gbit/s", "20us", overlap, shape=SHAPE)
        for cap in (1, 20_000, 10**12):
            measured = measure_step(ranks=3, bucket=cap, overlap=overlap, bandwidth="1Gbit/s", latency="20us",
                                    **SHAPE).total_s
            assert curve[caps.index(cap)] == pytest.approx(measured, rel=0.01), (overlap, cap)


def test_one_node_greys_out_bucket_and_overlap_and_too_many_nodes_are_refused():
    panel = Ch7Panel(ranks=2, shape=SHAPE)
    assert not panel.controls["bucket"].disabled and not panel.controls["overlap"].disabled
    panel.set(ranks=1)
    assert panel.controls["bucket"].disabled and panel.controls["overlap"].disabled
    assert panel.last.comm_s == 0 and panel.last.total_s == panel.last.compute_s
    panel.set(ranks=2)
    assert not panel.controls["bucket"].disabled
    before = panel.last
    big = Ch7Panel(ranks=2, shape=dict(SHAPE, batch=700))       # 1,438 digits: 2 nodes x 700 fit, 3 do not
    big.set(ranks=3)
    assert big.text.startswith("cannot run this setting: ranks:") and "at most 2 nodes" in big.text
    assert len(big.out.outputs) == 1 and big.last.ranks == 2     # the line replaces the figure; last is kept
    assert panel.last is before


@pytest.mark.parametrize("kwargs, name", [(dict(bucket=123), "bucket"), (dict(ranks=0), "ranks"),
                                          (dict(bandwidth="3Gbit/s"), "bandwidth"), (dict(latency="7us"), "latency"),
                                          (dict(overlap="yes"), "overlap")])
def test_a_setting_the_controls_do_not_offer_is_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        Ch7Panel(shape=SHAPE, **kwargs)


def test_the_scenario_control_shows_a_scenarios_evidence_and_not_its_truth():
    """The panel's scenario view prints what the analysis reads from the same scenario run apart."""
    from netlab.observe import scenarios
    panel = Ch7Panel(ranks=2, shape=SHAPE)
    assert panel.controls["seed"].disabled and not panel.controls["ranks"].disabled
    first, runs = png(panel), panel.runs
    panel.set(scenario="pfc_storm", seed=2)
    assert panel.runs == runs + 1 and panel.error is None, panel.text
    assert all(panel.controls[n].disabled for n in ("bucket", "overlap", "ranks", "bandwidth", "latency"))
    assert not panel.controls["seed"].disabled and png(panel) != first
    ref = scenarios.scenario("pfc_storm", 2)                         # run independently
    assert panel.last.makespan == ref.trace.makespan
    assert agrees(re.search(rf"step {TIME}", panel.text)[1], ref.trace.makespan), panel.text
    rows = rank_rows(panel.text)
    assert sorted(rows) == list(range(len(analysis.breakdown(ref.trace))))
    for row in analysis.breakdown(ref.trace):
        compute, exposed, idle = rows[row["rank"]]
        assert agrees(compute, row["compute_s"]) and agrees(exposed, row["exposed_comm_s"]), (row, rows)
        assert agrees(idle, row["idle_s"]), (row, rows)
    paused = analysis.pauses(ref.trace)
    assert paused and all(f"{p['port']}: {p['share']:.0%}, {p['pauses']}x, by the {p['by']}" in panel.text
                          for p in paused)
    assert ref.setup["network"] in panel.text and "storm" not in panel.text.split(":", 1)[1]   # the kind, once
    fixed = panel.text.splitlines()[-1]                              # what the greyed controls are set to
    assert f"nodes {ref.trace.world_size}," in fixed and "bandwidth 10 Gbit/s" in fixed
    assert agrees(re.search(rf"latency {TIME}", fixed)[1], ref.setup["latency_s"]) and "greyed out" in fixed
    storm = ref.plan.knobs
    assert f"{storm['period'] * 1e6:g} us" not in panel.text and "culprit" not in panel.text

    before = png(panel)
    panel.set(scenario="slow_link")                                   # same seed, another kind
    assert panel.error is None and png(panel) != before
    assert "PFC pauses: none (no switch model" in panel.text
    assert all(panel.controls[n].disabled for n in ("bucket", "overlap", "ranks", "bandwidth", "latency"))
    setup = scenarios.scenario("slow_link", 2).setup
    assert f"nodes {setup['ranks']}," in panel.text
    assert ("bucket size and overlap do not apply" in panel.text) == (setup["workload"] == "ps")
    assert agrees(re.search(rf"step {TIME}", panel.text)[1], scenarios.scenario("slow_link", 2).trace.makespan)

    panel.set(seed=-1)                                                # refused in one line, named
    assert panel.text.startswith("cannot run this setting: seed:")
    panel.set(scenario="none", seed=0)                                # back to the bucketed step
    assert not panel.controls["ranks"].disabled and panel.controls["seed"].disabled
    assert panel.last.ranks == 2 and panel.error is None


@pytest.mark.parametrize("kwargs, name", [(dict(scenario="dns"), "scenario"), (dict(seed=-1), "seed")])
def test_a_scenario_the_control_does_not_offer_is_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        Ch7Panel(shape=SHAPE, **kwargs)
