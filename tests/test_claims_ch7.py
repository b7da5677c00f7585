"""Chapter 7's claims about its measurements (tests/claims.py), each run at the chapter's CI sizes.

The references are independent of the code under test: Meta's Holistic Trace Analysis reading the
exported trace; the ring's message count and alpha-beta latency, 2(p-1) messages and 2(p-1) alpha per
all-reduce, counted from the trace; the bucket pipeline's arithmetic with the ready times the run
logged; the slowdown the experiment sets.
"""
import pytest

import netlab
from netlab.observe import analysis
from netlab.dataparallel import buckets, overlap, train
from netlab.net.network import network
from netlab.net.presets import device
from netlab.dataparallel.step import measure_step

from claims import claim

SHAPE = dict(width=256, layers=4, batch=256)          # the chapter's (CI keeps them)
NET = dict(bandwidth="10Gbit/s", latency="50us")
P, ALPHA = 4, 50e-6
RING_LATENCY = 2 * (P - 1) * ALPHA                     # one ring all-reduce's latency terms: 0.3 ms


def step(cap, overlapped=True):
    return measure_step(ranks=P, bucket=cap, overlap=overlapped, **NET, **SHAPE)


@claim("ch7.hta-agrees")
@pytest.mark.slow
def test_hta_reads_the_same_breakdown_and_overlap_from_the_chapter_step(tmp_path):
    hta = pytest.importorskip("hta.trace_analysis")
    from netlab.observe.hta_export import hta_export
    trace = step(300_000).trace
    ours = analysis.breakdown(trace)
    assert any(0 < r["overlap_frac"] < 1 for r in ours)                      # a step that overlaps
    ta = hta.TraceAnalysis(trace_files=hta_export(trace, str(tmp_path)), include_last_profiler_step=True)
    tb = ta.get_temporal_breakdown(visualize=False).set_index("rank")
    ov = ta.get_comm_comp_overlap(visualize=False).set_index("rank")
    for r in ours:
        theirs = tb.loc[r["rank"]]
        assert theirs["compute_time(us)"] == pytest.approx(r["compute_s"] * 1e6, rel=1e-3)
        assert theirs["non_compute_time(us)"] == pytest.approx(r["exposed_comm_s"] * 1e6, rel=1e-3)
        assert ov.loc[r["rank"], "comp_comm_overlap_pctg"] / 100 == pytest.approx(r["overlap_frac"], abs=1e-3)


@claim("ch7.tiny-buckets-pay-latency")
def test_one_bucket_per_tensor_pays_a_ring_latency_per_tensor_and_loses_to_300_kb():
    tensors = len(list(train.make_model(SHAPE["width"], SHAPE["layers"]).parameters()))
    tiny, mid = step(1), step(300_000)
    assert tensors == 10 and len(tiny.setup["buckets"]) == tensors
    # a ring all-reduce is 2(p-1) messages from every rank, each paying alpha: ten of them per rank
    assert tiny.trace.summary()[0]["messages_sent"] == tensors * 2 * (P - 1)
    assert RING_LATENCY == pytest.approx(0.3e-3)
    assert tiny.total_s > mid.total_s


@claim("ch7.late-boundary-loses")
def test_a_600_kb_cap_hides_almost_nothing_and_pays_a_second_latency():
    prof = buckets.backward_profile(SHAPE["width"], SHAPE["layers"], SHAPE["batch"])
    first = {cap: buckets.bucket_ready_flops(prof, buckets.plan(prof, cap))[0] / prof.total_flops
             for cap in (300_000, 600_000)}
    assert round(first[300_000], 2) == 0.77 and round(first[600_000], 2) == 0.97      # the printed 77 % and 97 %
    caps = (1, 20_000, 100_000, 300_000, 600_000, 10**12)
    runs = {cap: step(cap) for cap in caps}
    assert min(caps, key=lambda c: runs[c].total_s) == 300_000                          # the fastest here
    late, one = runs[600_000], runs[10**12]
    assert late.total_s > one.total_s
    # slower by the second all-reduce's latency, less what the first bucket hid: the compute left after it
    ready = buckets.bucket_ready_flops(prof, buckets.plan(prof, 600_000))[0]
    hidden = device("cpu-core").seconds(prof.total_flops - ready)
    assert 0 < hidden < 0.03 * late.compute_s
    assert late.total_s - one.total_s == pytest.approx(RING_LATENCY - hidden, abs=1e-7)


@claim("ch7.straggler-found")
def test_the_straggler_rule_names_the_slowed_rank():
    slow = netlab.run(overlap.overlapped_step, ranks=4, network=network("10Gbit/s", "5us"), device=device("cpu-core"),
                       bucket_bytes=1 << 20, slowdown={2: 1.3}, width=1024, layers=4, batch=64).trace
    s = analysis.straggler(slow)
    assert s["rank"] == 2 and s["durations_s"][2] == min(s["durations_s"].values())
    compute = {row["rank"]: row["compute_s"] for row in analysis.breakdown(slow)}
    # forward and backward run 1.3 times slower; the optimizer, a sliver of the compute, is not slowed
    assert 1.29 < compute[2] / compute[0] <= 1.3
