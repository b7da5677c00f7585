"""Chapter 5's claims, each checked by running the chapter's experiment at its CI sizes (tests/claims.py).

References: the enumeration of every hashing (exact), max-min fairness's own bound (the slowest flow of a
link shared by n flows gets at most its capacity / n), and bounds that hold for every seed tried.
"""
import collections
import itertools

import pytest

from claims import claim
from netlab import sim
from netlab.net import fabrics
from netlab.net.topology import Host
from netlab.sim import experiments

MB64 = 64 << 20


@claim("ch5.worst-link-of-many")
def test_one_switch_averages_2125_flows_on_its_busiest_link_but_the_fabrics_busiest_carries_4_or_more():
    counts = collections.Counter(max(collections.Counter(c).values()) for c in itertools.product(range(4), repeat=4))
    assert counts == {1: 24, 2: 180, 3: 48, 4: 4}                       # 4! ; 4 choose-3 x 4 x 3 ; 4 ; the rest
    mean = sum(m * c for m, c in counts.items()) / 256
    assert mean == 2.125 and 1 / mean == pytest.approx(0.47, abs=0.005)
    cdf = {m: sum(c for b, c in counts.items() if b <= m) / 256 for m in range(5)}
    assert sum(m * (cdf[m] ** 32 - cdf[m - 1] ** 32) for m in range(1, 5)) > 3
    rows = experiments.ecmp_collisions(k=8, seeds=20, nbytes=MB64, modes=("ecmp",))
    busiest = [1 / r["slowest_flow"] for r in rows if r["placement"] == "shuffled"]
    assert all(b == pytest.approx(round(b)) for b in busiest)            # equal links: 1 / (flows on the busiest)
    assert all(b >= 4 for b in busiest) and sum(b == pytest.approx(4) for b in busiest) > len(busiest) / 2


@claim("ch5.ordered-ignores-ratio")
def test_inside_a_leaf_and_rack_ordered_the_ring_takes_the_same_time_at_every_ratio():
    over = experiments.oversubscription(ratios=(1, 2, 4), seeds=1)
    for key in ("inside_leaf_s", "across_ordered_s"):
        assert len({round(r[key], 12) for r in over}) == 1, key


@claim("ch5.collisions-stack-on-oversubscription")
def test_the_slowest_shuffled_flow_gets_about_half_the_even_share_at_every_ratio_and_time_grows_with_it():
    for seed in range(6):
        times, shares = {}, {}
        for ratio in (1, 2, 4):
            r = sim.simulate(sim.Simulator(fabrics.spine_leaf(8, 4, ratio, 16, nic="100GbE"), placement="shuffled", seed=seed), "allreduce", "ring", MB64)
            times[ratio], shares[ratio] = r.time_s, r.slowest_flow * ratio           # slowest / (B / ratio)
        assert len({round(s, 9) for s in shares.values()}) == 1, seed                # the same collisions at each ratio
        assert 0.35 < shares[1] < 0.75, (seed, shares[1])                            # "about half"
        for ratio in (2, 4):
            assert 0.85 * ratio < times[ratio] / times[1] <= ratio, (seed, ratio)    # close to proportionally


@claim("ch5.shuffle-costs-where-flows-meet")
def test_shuffling_is_free_for_small_jobs_on_large_fabrics_and_costs_jobs_that_fill_them():
    designs = {
        "spine-leaf 4:1, flat ring": (fabrics.spine_leaf(8, 4, 4, 128), "ring"),
        "8-GPU servers, 1 NIC, hierarchical": (fabrics.fat_tree(16, host=Host(8, nics=1), hosts=128), "hierarchical"),
    }
    busbw = {}
    for placement in ("ordered", "shuffled"):
        for row in experiments.scaling(designs, scales=(64, 1024), placement=placement, seed=1):
            busbw[row["design"], row["ranks"], placement] = row["busbw_GBps"]
    for d in designs:
        assert busbw[d, 64, "shuffled"] >= 0.99 * busbw[d, 64, "ordered"], d                # a small job: even
    assert busbw["spine-leaf 4:1, flat ring", 1024, "shuffled"] < 0.6 * busbw["spine-leaf 4:1, flat ring", 1024, "ordered"]
