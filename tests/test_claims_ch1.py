"""Chapter 1's claims, each checked by running the chapter's experiment at its CI sizes (tests/claims.py).

The references are closed forms written out here: the ring all-reduce's 2(p-1) alpha + 2(p-1)/p n / B and
the compute-to-communication ratio of the chapter's section 3, never the package's own cost code.
"""
import pytest

import netlab
from netlab.dataparallel import train
from claims import claim
from netlab.dataparallel.step import measure_step, scaling

ALPHA = 5e-6


def ring_s(p, n, bandwidth, alpha=ALPHA):
    """Thakur, Rabenseifner & Gropp (2005): the ring all-reduce of n bytes on p ranks."""
    return 0.0 if p == 1 else 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bandwidth


@claim("ch1.idle-from-ratio")
def test_measured_idle_fraction_is_the_ratios_within_a_point_and_latency_explains_the_rest():
    B = 10e9 / 8
    for name, b in (("cpu-core", 32), ("A100-bf16", 32), ("A100-bf16", 128)):
        run = measure_step(ranks=8, bandwidth="10Gbit/s", latency="5us", width=1024, batch=b, device=name)
        dev = netlab.device(name)
        ratio = 4 / 3 * 7 / 8 * dev.peak_flops * dev.efficiency / (b * B)
        idle = run.trace.summary()[0]["idle_frac"]
        assert abs(idle - ratio / (1 + ratio)) < 0.01, (name, b, idle, ratio)
        # what the ratio leaves out is the ring's 14 latencies: with them the idle fraction is the measured one
        comm = ring_s(8, run.grad_bytes, B)
        assert idle == pytest.approx(comm / (comm + run.compute_s), abs=2e-3), (name, b)


@pytest.fixture(scope="module")
def scaled():
    rows = scaling(ranks_list=(1, 2, 4), bandwidths=("1Gbit/s", "10Gbit/s"), width=512)
    return {(r["bandwidth"], r["ranks"]): r for r in rows}


@claim("ch1.slow-link-slower-than-one")
def test_two_nodes_at_1gbit_process_fewer_samples_per_second_than_one(scaled):
    assert scaled["1Gbit/s", 2]["samples_per_s"] < scaled["1Gbit/s", 1]["samples_per_s"]
    # why: the exchange, n / B at p = 2, is longer than the step's compute
    one = scaled["1Gbit/s", 2]
    n = train.grad_bytes(512)
    assert ring_s(2, n, 1e9 / 8) > one["compute_s"]


@claim("ch1.efficiency-from-ring")
def test_efficiency_at_10gbit_is_compute_over_compute_plus_the_ring_about_half(scaled):
    n = train.grad_bytes(512)
    for p in (2, 4):
        row = scaled["10Gbit/s", p]
        assert scaled["10Gbit/s", p]["samples_per_s"] > scaled["10Gbit/s", p // 2]["samples_per_s"]   # speeds up
        expected = row["compute_s"] / (row["compute_s"] + ring_s(p, n, 10e9 / 8))
        assert row["efficiency"] == pytest.approx(expected, rel=0.01)
        assert 0.3 < row["efficiency"] < 0.7                                                # "about half"
