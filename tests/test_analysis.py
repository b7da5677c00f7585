"""Trace analysis: hand-computed cases, Meta's Holistic Trace Analysis as the judge, and saved traces."""
import json
import time

import pytest

import netlab
from netlab.observe import analysis
from netlab.dataparallel import overlap, train
from netlab.observe import hta_export as ax
from netlab.runtime.comm import Event
from netlab.net.network import network
from netlab.net.presets import device
from netlab.runtime.trace import Trace

DEV = device("cpu-core")


def toy():
    """Two ranks. Rank 0 computes [0, 6), its all-reduce runs [4, 9); rank 1 computes [0, 7), all-reduce [7, 9)."""
    ev = [Event(0, "compute", -1, 0, 0.0, 6.0, "backward"), Event(0, "region", -1, 0, 4.0, 9.0, "allreduce:ring"),
          Event(0, "send", 1, 100, 7.0, 8.0, "allreduce:ring"), Event(0, "recv", 1, 100, 8.0, 9.0, "allreduce:ring"),
          Event(1, "compute", -1, 0, 0.0, 7.0, "backward"), Event(1, "region", -1, 0, 7.0, 9.0, "allreduce:ring"),
          Event(1, "send", 0, 100, 7.0, 8.0, "allreduce:ring"), Event(1, "recv", 0, 100, 8.0, 9.0, "allreduce:ring"),
          Event(1, "compute", -1, 0, 9.0, 10.0, "optimizer")]
    return Trace(ev, [9.0, 10.0], True)


def test_breakdown_by_hand():
    rows = analysis.breakdown(toy())
    assert rows[0] == {"rank": 0, "span_s": 9.0, "compute_s": 6.0, "comm_s": 5.0, "exposed_comm_s": 3.0,
                       "idle_s": 0.0, "overlap_s": 2.0, "overlap_frac": 0.4}
    assert rows[1]["compute_s"] == 8.0 and rows[1]["exposed_comm_s"] == 2.0 and rows[1]["overlap_frac"] == 0.0


def test_straggler_and_critical_path_by_hand():
    s = analysis.straggler(toy())
    assert s["rank"] == 1 and s["lag_s"] == 3.0 and s["durations_s"] == {0: 5.0, 1: 2.0}   # the shortest
    path = analysis.critical_path(toy())
    assert [(p["rank"], p["label"], p["start_s"], p["end_s"]) for p in path] == [
        (1, "backward", 0.0, 7.0), (1, "allreduce:ring", 7.0, 9.0), (1, "optimizer", 9.0, 10.0)]


def test_link_utilisation_by_hand():
    u = analysis.link_utilisation(toy(), bins=10)      # bins of 1 s over [0, 10)
    assert u["ranks"][0]["out"] == [0] * 7 + [1.0, 0, 0]
    assert u["ranks"][1]["in"][8] == 1.0 and u["ranks"][0]["mean_out"] == pytest.approx(0.1)


def _overlapped(net, slowdown=None):
    return netlab.run(overlap.overlapped_step, ranks=4, network=net, device=DEV, width=1024, layers=4,
                       batch=256, bucket_bytes=1 << 20, slowdown=slowdown).trace


@pytest.mark.slow
def test_hta_agrees_on_breakdown_and_overlap(tmp_path):
    """HTA reads netlab's export and finds the same compute, exposed comm, idle and overlap (0.1 %)."""
    hta = pytest.importorskip("hta.trace_analysis")
    tr = _overlapped(network("1Gbit/s", "50us"), slowdown={2: 1.2})          # steps of ~0.2 s
    ours = analysis.breakdown(tr)
    assert all(0.1 < r["overlap_frac"] < 0.9 for r in ours)                # really overlapped
    ta = hta.TraceAnalysis(trace_files=ax.hta_export(tr, str(tmp_path)), include_last_profiler_step=True)
    tb = ta.get_temporal_breakdown(visualize=False).set_index("rank")
    ov = ta.get_comm_comp_overlap(visualize=False).set_index("rank")
    for r in ours:
        us = tb.loc[r["rank"]]
        assert us["kernel_time(us)"] == pytest.approx(r["span_s"] * 1e6, rel=1e-3)
        assert us["compute_time(us)"] == pytest.approx(r["compute_s"] * 1e6, rel=1e-3)
        assert us["non_compute_time(us)"] == pytest.approx(r["exposed_comm_s"] * 1e6, rel=1e-3)
        assert us["idle_time(us)"] == pytest.approx(r["idle_s"] * 1e6, abs=1e-3 * r["span_s"] * 1e6)
        assert ov.loc[r["rank"], "comp_comm_overlap_pctg"] / 100 == pytest.approx(r["overlap_frac"], abs=1e-3)


def test_hta_finds_the_same_straggler(tmp_path):
    hta = pytest.importorskip("hta.trace_analysis")
    tr = _overlapped(network("10Gbit/s", "5us"), slowdown={2: 1.3})
    ours = analysis.straggler(tr)
    assert ours["rank"] == 2 and ours["durations_s"][2] == min(ours["durations_s"].values())
    assert analysis.straggler(_overlapped(network("10Gbit/s", "5us")))["rank"] is None   # nobody is late
    ta = hta.TraceAnalysis(trace_files=ax.hta_export(tr, str(tmp_path)), include_last_profiler_step=True)
    assert list(ta.get_potential_stragglers(num_candidates=1)) == [2]


def test_saved_trace_round_trip_and_counters(tmp_path):
    tr = toy()
    path = tr.save(str(tmp_path / "t.json"))
    back = ax.load(path)
    assert analysis.analyze(back) == analysis.analyze(tr)
    doc = ax.with_counters(tr, bins=10)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert len(counters) == 2 * 11 and counters[7]["args"] == {"out": 1.0, "in": 0.0}


def test_bad_traces(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(ValueError, match="not a netlab trace"):
        ax.load(str(bad))
    bad.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        ax.load(str(bad))
    doc = toy().to_chrome()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("pid") != 1]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="rank 1 is missing"):
        ax.load(str(bad))


def late_step(comm, late_s=0.0, **kw):
    """A training step whose last rank starts `late_s` of wall time after the others: a known straggler."""
    if comm.rank == comm.world_size - 1:
        time.sleep(late_s)
    return train.step(comm, **kw)


def test_wall_clock_trace():
    """The same analysis on a wall-clock step (what torchrun on a real cluster records). On the wall
    clock two ranks' collectives can last the same to 0.1 %, and then no rank is a straggler; a rank
    held back 0.5 s makes the answer certain whatever a loaded machine's jitter (it enters last, and
    the other rank waits for it)."""
    tr = netlab.run(late_step, ranks=2, late_s=0.5, device=DEV, width=64, batch=8).trace
    assert not tr.virtual
    for r in analysis.breakdown(tr):
        assert r["compute_s"] > 0 and r["comm_s"] > 0
        assert r["compute_s"] + r["exposed_comm_s"] + r["idle_s"] == pytest.approx(r["span_s"], rel=1e-9)
    late = analysis.straggler(tr)
    assert late["rank"] == 1 and late["lag_s"] > 0.3
    assert analysis.critical_path(tr)


def test_cli_step_overlap_and_analyze(tmp_path, capsys):
    from netlab.cli import main
    path = str(tmp_path / "step.json")
    assert main(["step", "--ranks", "2", "--width", "256", "--layers", "4", "--bucket", "100K", "--overlap",
                 "--json", "--trace", path]) == 0
    step = json.loads(capsys.readouterr().out)
    assert len(step["buckets"]) > 1 and step["exposed_comm_s"] > 0 and 0 < step["overlap_frac"] < 1
    assert main(["analyze", path, "--json", "--hta", str(tmp_path / "hta")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["breakdown"][0]["exposed_comm_s"] == pytest.approx(step["exposed_comm_s"])
    assert report["straggler"]["rank"] is None and (tmp_path / "hta" / "rank_1.json").exists()


def test_cli_bad_input(tmp_path, capsys):
    from netlab.cli import main
    assert main(["step", "--bucket", "0"]) == 2
    assert "bucket" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("{}")
    assert main(["analyze", str(tmp_path / "x.json")]) == 2
    assert "not a netlab trace" in capsys.readouterr().err
