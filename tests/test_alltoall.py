"""All-to-all: equal to torch's own on real ranks, its alpha-beta cost exact, nccl-tests' busbw factor,
and on the flow simulator the per-link bytes a count by hand gives and the bisection it needs."""
import numpy as np
import pytest
import torch
import torch.distributed as dist

import netlab
from netlab.collectives import bench, cost
from netlab import collectives as C
from netlab.net import fabrics
from netlab.sim import Simulator, alltoall as sim_a2a, simulate

NET = netlab.network("100Gbit/s", "5us")


def both_ways(comm, algo, m, dtype):
    """Ours, torch's all_to_all_single, torch's all_to_all (list form), and the transpose done by hand."""
    p = comm.world_size
    x = (torch.arange(p * m) + 1000 * comm.rank).to(dtype)        # block j of rank r: 1000 r + j m ...
    single = torch.empty_like(x)
    dist.all_to_all_single(single, x, group=comm.group)
    parts = [torch.empty(m, dtype=dtype) for _ in range(p)]
    dist.all_to_all(parts, list(x.split(m)), group=comm.group)
    by_hand = torch.cat([(torch.arange(m) + comm.rank * m + 1000 * src).to(dtype) for src in range(p)])
    ours = C.all_to_all(comm, x, algo=algo)
    return [t.tolist() for t in (ours, single, torch.cat(parts), by_hand)] + [x.tolist()]


@pytest.mark.parametrize("algo", ["pairwise", "concurrent"])
@pytest.mark.parametrize("p, m", [(1, 3), (2, 1), (3, 5), (5, 2), (8, 7)])
def test_equals_torch_and_the_transpose(algo, p, m):
    for dtype in (torch.float32, torch.int64):
        res = netlab.run(both_ways, algo, m, dtype, ranks=p, network=NET)
        for rank, (ours, single, listed, by_hand, sent) in enumerate(res.values):
            assert ours == single == listed == by_hand, f"{algo} p={p} m={m} {dtype}: rank {rank}"
            assert sent == res.values[rank][4]                          # the input is left as it was


def _timed(comm, algo, count):
    start = comm.now()
    C.all_to_all(comm, None, algo=algo, count=count)
    return comm.now() - start


@pytest.mark.parametrize("algo", ["pairwise", "concurrent"])
def test_virtual_time_is_p_minus_one_blocks_each_way(algo):
    for p in (2, 5, 8):
        for s in (p * 256, p * (1 << 20)):
            res = netlab.run(_timed, algo, s // 4, ranks=p, network=NET)
            by_hand = (p - 1) * (5e-6 + s / p / 12.5e9)                 # (p-1)(alpha + S/(pB)), typed out
            assert max(res.values) == pytest.approx(by_hand, rel=1e-6)
            assert cost.time("alltoall", algo, p, s, network=NET) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.slow           # the bench on real ranks: about 4 s
def test_bench_reports_nccl_tests_busbw_and_checks_against_torch():
    rows = bench.bench("alltoall", "pairwise", 4, [4 << 10, 64 << 20], network=NET, check=True)
    for r in rows:
        assert r["check"] == "ok" and r["count"] * 4 == r["bytes"] and r["count"] % 4 == 0
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 3 / 4)
        assert r["time_s"] == pytest.approx(r["predicted_s"], rel=1e-6)
    assert rows[-1]["busbw_GBps"] == pytest.approx(12.5, rel=0.01)         # -> B at large S
    assert rows[0]["busbw_GBps"] < 0.1 * 12.5                              # latency-bound below p alpha B


def test_bench_cli_lists_alltoall_and_refuses_what_it_cannot_run(run_cli):
    code, out, _ = run_cli("bench", "alltoall", "--ranks", "3", "--algo", "all", "--bandwidth", "10Gbit/s",
                           "--sizes", "12K", "--check")
    assert code == 0 and "pairwise" in out and "concurrent" in out and "WRONG" not in out
    code, _, err = run_cli("bench", "alltoall", "--ranks", "4", "--bandwidth", "10Gbit/s", "--ranks-per-host", "2")
    assert code != 0 and "ranks-per-host: the all-to-all runs on one rank per host" in err


def test_bad_input_gets_one_line_naming_it():
    def odd(comm):
        C.all_to_all(comm, torch.zeros(5))
    with pytest.raises(netlab.RankError, match="tensor: an all-to-all needs 2 equal blocks"):
        netlab.run(odd, ranks=2, network=NET)
    with pytest.raises(ValueError, match="algo: alltoall has no algorithm 'ring'"):
        C.resolve("alltoall", "ring")
    assert C.counts("alltoall", 1000, 3) == (249, 249, 996)               # p whole blocks of whole elements


def test_k4_fat_tree_link_bytes_by_hand():
    """16 hosts, 2 per edge switch, 4 per pod; S per host, S/16 to each other host, sprayed.
    Host NIC: 15 blocks. Edge uplink: 2 hosts x 14 blocks leave the edge, over 2 uplinks: 14 blocks each.
    Aggregation -> core: 4 hosts x 12 blocks leave the pod, over 4 core links: 12 blocks each."""
    topo = fabrics.fat_tree(4)
    s = 16 * 4096
    r = simulate(Simulator(topo, routing="spray"), "alltoall", "concurrent", s)
    block = s / 16
    labels = [topo.link_label(i) for i in range(topo.links)]
    loads = {lab: b for lab, b in zip(labels, r.link_bytes)}
    assert loads["h0->edge0.0"] == pytest.approx(15 * block)
    assert loads["edge0.0->h0"] == pytest.approx(15 * block)
    for lab, b in loads.items():
        if lab.startswith("edge") and "->agg" in lab:
            assert b == pytest.approx(14 * block), lab
        if lab.startswith("agg") and "->core" in lab:
            assert b == pytest.approx(12 * block), lab
    ring = simulate(Simulator(topo, routing="spray"), "allreduce", "ring", s)
    # ring in topology order: each step one flow of S/16 leaves every edge, split over its 2 uplinks
    up = [b for lab, b in zip(labels, ring.link_bytes) if lab.startswith("edge") and "->agg" in lab]
    assert up == pytest.approx([2 * 15 * block / 2] * len(up))


@pytest.mark.parametrize("k", [4, 8])
def test_oversubscription_slows_all_to_all_by_about_the_ratio_and_the_ring_only_past_h(k):
    """Bandwidth-bound sizes (S >> p alpha B): all-to-all's slowdown nears R (p-h)/(p-1) from below (the
    latency terms do not grow); the ring's flows, one per edge switch, get min(B, h B/R)."""
    p, h, ratio = k ** 3 // 4, k // 2, 4
    rows = {(r["pattern"], r["ratio"]): r for r in sim_a2a.bisection(k=k, ratios=(1, ratio), nbytes=64 << 20)}
    for row in rows.values():
        assert row["time_s"] == pytest.approx(row["formula_s"], rel=0.01)
    ring = rows["ring all-reduce", ratio]["slowdown"]
    assert ring == pytest.approx(1.0) if h >= ratio else 1.5 < ring <= ratio / h
    a2a = rows["all-to-all", ratio]
    assert 3 < a2a["slowdown"] < ratio * (p - h) / (p - 1) and a2a["bottleneck_kind"] == "fabric"
    assert rows["all-to-all", 1]["bottleneck_kind"] == "nic"


def test_oversubscribed_fat_tree_has_the_ratio_at_the_edge_only():
    base, over = fabrics.fat_tree(4), fabrics.oversubscribed_fat_tree(4, 4)
    changed = np.flatnonzero(base.capacity != over.capacity)
    assert len(changed) == 2 * 8 * 2                        # 8 edges x 2 uplinks, both directions
    assert np.allclose(over.capacity[changed], base.capacity[changed] / 4)
    assert all({over.labels[over.link_src[i]][:3], over.labels[over.link_dst[i]][:3]} == {"edg", "agg"}
               for i in changed)
    with pytest.raises(ValueError, match="ratio"):
        fabrics.oversubscribed_fat_tree(4, 0)
