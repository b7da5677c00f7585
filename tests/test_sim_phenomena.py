"""What the simulator must reproduce: oversubscription, ECMP collisions, hierarchy, rails, the PS hotspot."""
import numpy as np
import pytest

from netlab.collectives import cost
from netlab import sim
from netlab.net import fabrics
from netlab.net.topology import Host
from netlab.sim import experiments


def test_oversubscription_slows_a_ring_across_the_spine_but_not_inside_a_leaf():
    rows = experiments.oversubscription(ratios=(1, 2, 4), leaves=8, spines=4, ports_per_leaf=16, seeds=3)
    inside = [r["inside_leaf_s"] for r in rows]
    across = [r["across_shuffled_s"] for r in rows]
    assert inside[0] == inside[1] == inside[2]                      # a leaf is non-blocking at any ratio
    assert across[0] < across[1] < across[2]
    assert across[2] / across[1] == pytest.approx(2.0, rel=0.15)   # bound by the uplinks: time ~ ratio
    assert all("spine" in r["shuffled_bottleneck"] for r in rows)
    ordered = [r["across_ordered_s"] for r in rows]                 # topology-aware ring: one flow per uplink
    assert ordered[0] == ordered[2]


def test_ecmp_collisions_over_20_seeds_and_what_recovers_them():
    rows = experiments.ecmp_collisions(k=8, seeds=20, nbytes=16 << 20, modes=("ecmp", "adaptive", "spray"))
    stats = {(s["placement"], s["routing"]): s for s in experiments.summarize(rows)}
    assert stats[("ordered", "ecmp")]["mean"] == 1.0                 # topology-ordered ring: full rate
    ecmp = stats[("shuffled", "ecmp")]
    assert ecmp["runs"] == 20
    # Every link here is 100GbE, so under max-min fairness the slowest flow gets exactly 1/n of the line,
    # n the flows on the busiest link, and n <= 16: a core link carries at most the flows into one pod's
    # k^2/4 = 16 hosts (each host receives one ring flow). True for any seed.
    for row in rows:
        if (row["placement"], row["routing"]) == ("shuffled", "ecmp"):
            n = 1 / row["slowest_flow"]
            assert n == pytest.approx(round(n), abs=1e-9) and 1 <= round(n) <= 8 ** 2 // 4, row
    assert stats[("shuffled", "spray")]["min"] == pytest.approx(1.0)    # spraying: no collision survives
    assert ecmp["mean"] < stats[("shuffled", "adaptive")]["mean"] < 1.0
    slow = {(s["placement"], s["routing"]): s for s in experiments.summarize(rows, value="slowdown")}
    assert slow[("shuffled", "ecmp")]["mean"] > 2.5 and slow[("shuffled", "spray")]["max"] == pytest.approx(1.0)


def test_hierarchical_beats_the_flat_ring_by_what_the_formula_predicts():
    rows = {r["algo"]: r for r in experiments.hierarchy(hosts=16, accelerators=8, nbytes=64 << 20)}
    for algo in ("hierarchical", "hierarchical_rail"):
        assert rows[algo]["speedup"] == pytest.approx(rows[algo]["formula_speedup"], rel=0.01)
    assert rows["hierarchical_rail"]["speedup"] > 5            # NVLink3 (300 GB/s) vs 100GbE (12.5 GB/s)
    slow_intra = {r["algo"]: r for r in experiments.hierarchy(hosts=16, accelerators=8, intra="PCIe3x16")}
    assert slow_intra["hierarchical_rail"]["speedup"] < rows["hierarchical_rail"]["speedup"]


def test_rail_optimized_servers_beat_a_single_nic_and_a_shared_tor():
    rows = experiments.nic_designs(k=16, hosts=16, accelerators=8)
    by = {(r["design"], r["algo"]): r for r in rows}
    single = by[("1 NIC per server", "hierarchical")]
    tor = by[("NIC per GPU, same ToR", "hierarchical_rail")]
    rail = by[("NIC per GPU, rail-optimized", "hierarchical_rail")]
    assert rail["busbw_GBps"] > 5 * single["busbw_GBps"]              # 8 NICs instead of 1
    assert rail["busbw_GBps"] > tor["busbw_GBps"]                     # rails: no ECMP collisions between rails
    assert single["bottleneck_kind"] == "nic" and tor["bottleneck_kind"] == "fabric"
    assert rail["slowest_flow"] == 1.0 and tor["slowest_flow"] < 1.0


def test_a_flat_ring_across_rails_collides_where_the_rail_algorithm_does_not():
    topo = fabrics.fat_tree(16, host=Host(8, nics=8, rail=True), hosts=8)
    flat = sim.simulate(topo, "allreduce", "ring", 64 << 20)
    rail = sim.simulate(topo, "allreduce", "hierarchical_rail", 64 << 20)
    assert topo.kind_of(flat.bottleneck_link) == "fabric" and flat.slowest_flow < 1
    assert rail.slowest_flow == 1.0


def test_parameter_server_hotspot_is_the_server_downlink_and_sharding_spreads_it():
    rows = experiments.ps_hotspot(k=4, servers=(1, 4), nbytes=16 << 20)
    one, four, ring = rows
    assert one["push_bottleneck"] == "edge0.0->h0"                    # all 15 workers into server 0
    assert one["pull_bottleneck"] == "h0->edge0.0"
    p, n = 16, 16 << 20
    bound = 2 * (p - 1) * n / 12.5e9                                  # (p-1) gradients each way, one NIC
    assert bound < one["time_s"] < bound * 1.01
    assert four["time_s"] < one["time_s"] / 2
    assert ring["time_s"] < four["time_s"]
    link_load = one["result"].link_bytes
    hottest = np.argsort(link_load)[-2:]
    assert {one["result"].topology.link_label(l) for l in hottest} == {"edge0.0->h0", "h0->edge0.0"}


def test_scaling_rows_cover_each_design_up_to_its_size():
    designs = {"fat-tree k=8": (fabrics.fat_tree(8), "ring"),
               "spine-leaf 4:1": (fabrics.spine_leaf(4, 2, 4, 16), "ring")}
    rows = experiments.scaling(designs, scales=(8, 64, 512), nbytes=16 << 20)
    assert [(r["design"], r["ranks"]) for r in rows] == [("fat-tree k=8", 8), ("fat-tree k=8", 64),
                                                         ("spine-leaf 4:1", 8), ("spine-leaf 4:1", 64)]
    for r in rows:
        assert 0 < r["busbw_GBps"] <= 12.5
    assert experiments.step_count("allreduce", "ring", 1024) == 2046


def test_busbw_of_an_uncontended_ring_approaches_the_nic_for_large_messages():
    topo = fabrics.fat_tree(4)
    r = sim.simulate(topo, "allreduce", "ring", 1 << 30)
    assert r.busbw_GBps == pytest.approx(12.5, rel=0.01)
    assert r.busbw_GBps * 1e9 == pytest.approx(cost.busbw("allreduce", 16, r.nbytes, r.time_s))
