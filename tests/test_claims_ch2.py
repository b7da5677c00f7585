"""Chapter 2's claims, each checked by running the chapter's experiment at its CI sizes (tests/claims.py).

The references are the algorithms' closed forms (Thakur, Rabenseifner & Gropp 2005), written out here
with the network's alpha and B, and the measurements are real ranks (``bench``), never the package's own
cost module against itself.
"""
import math

import pytest

import netlab
from claims import claim
from netlab.collectives import zero
from netlab.collectives.bench import bench

NET = netlab.network("100Gbit/s", "5us")
A, B = NET.nic.latency, NET.nic.bandwidth


def ring_s(p, n, alpha=A, bw=B):
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bw


def halving_doubling_s(p, n, alpha=A, bw=B):
    """Power-of-two p' = 2^floor(lg p) run halving-doubling; the p - p' others fold in and out (two whole n)."""
    q = 1 << int(math.log2(p))
    fold = 0.0 if q == p else 2 * (alpha + n / bw)
    return fold + 2 * math.log2(q) * alpha + 2 * (q - 1) / q * n / bw


def measured(algo, p, n, net=NET):
    return bench("allreduce", algo, p, [n], network=net)[0]["time_s"]


@claim("ch2.naive-linear-ring-below-2x")
def test_naive_grows_seven_times_from_2_to_8_and_the_ring_by_three_quarters_never_2x():
    n = 16 << 20
    naive = measured("naive", 8, n) / measured("naive", 2, n)
    ring = measured("ring", 8, n) / measured("ring", 2, n)
    assert naive == pytest.approx(14 / 2, rel=0.01)                  # 2(p-1) (alpha + n/B): 14 against 2
    assert ring == pytest.approx(ring_s(8, n) / ring_s(2, n), rel=0.01)
    assert 1.7 < ring < 2                                            # "about three quarters", never double
    assert 2 * (8 - 1) * A < 0.05 * ring_s(8, n)                    # "its latencies add little at this size"


@claim("ch2.fold-doubles-halving-doubling")
def test_halving_doubling_costs_about_twice_the_ring_on_6_and_12_ranks_and_ties_on_8():
    n = 16 << 20                                                     # the bandwidth-bound regime, like 64 MiB
    for p in (6, 12):
        hd, ring = measured("halving_doubling", p, n), measured("ring", p, n)
        assert hd == pytest.approx(halving_doubling_s(p, n), rel=0.01)
        assert 1.8 < hd / ring < 2.3, (p, hd / ring)
    assert measured("halving_doubling", 8, n) <= measured("ring", 8, n)
    for p in (6, 12):                                                # and at the chapter's 64 MiB, by the closed forms
        assert 1.8 < halving_doubling_s(p, 64 << 20) / ring_s(p, 64 << 20) < 2.3


@claim("ch2.recursive-doubling-fold-on-6")
def test_recursive_doubling_of_1kib_is_slower_on_6_ranks_than_on_8():
    n = 1024
    t6, t8 = measured("recursive_doubling", 6, n), measured("recursive_doubling", 8, n)
    assert t6 > t8
    assert t6 == pytest.approx(4 * (A + n / B), rel=0.01) and t8 == pytest.approx(3 * (A + n / B), rel=0.01)


@claim("ch2.busbw-approaches-link")
def test_ring_busbw_approaches_but_never_exceeds_the_link_at_large_sizes():
    rows = bench("allreduce", "ring", 8, [1 << 10, 1 << 20, 1 << 24], network=NET)
    busbw = [r["busbw_GBps"] * 1e9 for r in rows]
    assert busbw == sorted(busbw)
    assert 0.95 * B < busbw[-1] < B                                  # 12.14 of 12.5 GB/s at 16 MiB
    assert busbw[-1] == pytest.approx(B * (2 * 7 / 8 * (1 << 24) / B) / ring_s(8, 1 << 24), rel=0.01)


@claim("ch2.nics-not-algorithm")
def test_most_of_the_rails_lead_is_four_nics_and_the_rest_the_algorithms_1_75_against_1():
    hosts = netlab.network(preset="25GbE", ranks_per_host=4, intra="NVLink3")
    n = 16 << 20
    ring, rail = measured("ring", 8, n, hosts), measured("hierarchical_rail", 8, n, hosts)
    alpha, bw = hosts.nic.latency, hosts.nic.bandwidth
    per_nic = ring_s(8, n / 4, alpha, bw)                           # 4 rings of n/4, one per NIC
    assert 3 < ring / per_nic < 4                                    # the NICs: 4x fewer bytes each, same latencies
    assert 1.2 < per_nic / rail < 1.75                               # the algorithm: at most 1.75 n/4 against 1 n/4
    assert ring / per_nic > per_nic / rail                           # "most of the lead"


@claim("ch2.zero-same-bytes")
def test_zero_stage_1_sends_the_all_reduces_bytes_and_keeps_a_quarter_of_adams_state():
    kw = dict(ranks=4, network=netlab.network("10Gbit/s", "5us"), device=netlab.device("cpu-core"))
    sharded = netlab.run(zero.sharded_adam_step, sharded=True, **kw)
    plain = netlab.run(zero.sharded_adam_step, sharded=False, **kw)
    for s, p in zip(sharded.values, plain.values):
        assert abs(s["bytes_sent"] - p["bytes_sent"]) <= 16 * 2 * 3                 # headers of 2(p-1) messages
        assert s["state_bytes"] == pytest.approx(p["state_bytes"] / 4, abs=64)
        assert (s["params"] - p["params"]).abs().max().item() < 1e-5
