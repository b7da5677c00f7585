"""In-network aggregation: the sum equals torch's all-reduce, the virtual time equals the closed form
(itself checked against a brute-force pipeline), the simulator agrees on a one-switch fabric, the bus
bandwidth doubles the ring's at large p, and a slow aggregator caps the rate."""
import math

import pytest
import torch
import torch.distributed as dist

import netlab
from netlab.collectives import cost
from netlab.codesign import ina
from netlab.net import fabrics
from netlab.net.network import Link
from netlab.sim import ina as sim_ina

NET = netlab.network("100Gbit/s", "5us")
B, ALPHA = NET.nic.bandwidth, NET.nic.latency
CASES = [(k, cap) for k in (1, 3, 16) for cap in (math.inf, 4e9)]      # 4 GB/s: below the 12.5 GB/s line
SIZES = [4 << 10, 1 << 20, 64 << 20]


@pytest.fixture(scope="module", autouse=True)
def pool():
    netlab.get_cluster(9)


def pipeline(n, k, up, agg, down):
    """Brute force: k chunks through three single-server stages in order, each chunk as soon as it can."""
    t1 = t2 = t3 = 0.0
    for _ in range(k):
        t1 += up(n / k)
        t2 = max(t2, t1) + agg(n / k)
        t3 = max(t3, t2) + down(n / k)
    return t3


def test_the_closed_form_is_a_three_stage_pipeline():
    for n in (1e3, 1e6, 3e8):
        for k in (1, 2, 7, 64):
            for cap in (math.inf, 1e9, 5e10):
                brute = pipeline(n, k, NET.nic.time, lambda c: c / cap, NET.nic.time)
                assert cost.ina_allreduce(8, n, NET.nic, chunks=k, capacity=cap) == pytest.approx(brute, rel=1e-12)
    assert cost.ina_allreduce(1, 1e6, NET.nic) == 0.0


def _sum(comm, n, chunks, capacity):
    workers = comm.world_size - 1
    g = torch.Generator().manual_seed(comm.rank)
    x = torch.randint(-100, 100, (n,), generator=g).float() if comm.rank < workers else torch.zeros(n)
    ref = x.clone()
    dist.all_reduce(ref, group=comm.group)                 # torch's own; the switch adds zeros
    ina.allreduce(comm, x, chunks=chunks, capacity=capacity)
    return bool(torch.equal(x, ref))


@pytest.mark.parametrize("p, n, chunks", [(2, 10, 1), (3, 1000, 7), (5, 33, 33), (8, 300_000, 4)])
def test_the_sum_is_torchs_all_reduce(p, n, chunks):
    res = netlab.run(_sum, n, chunks, 3e9, ranks=p + 1, network=ina.switch_network(NET, p))
    assert all(res.values)


def _sweep(comm):
    out = []
    for nbytes in SIZES:
        for k, cap in CASES:
            comm.restart_clock()
            ina.allreduce(comm, None, chunks=k, capacity=cap, count=nbytes // 4)
            out.append(comm.now())
    return out


def test_virtual_time_matches_the_formula_within_one_percent():
    for p in range(2, 9):
        res = netlab.run(_sweep, ranks=p + 1, network=ina.switch_network(NET, p))
        times = [max(t) for t in zip(*res.values)]
        expected = [cost.ina_allreduce(p, s, NET.nic, chunks=k, capacity=cap) for s in SIZES for k, cap in CASES]
        for t, e in zip(times, expected):
            assert t == pytest.approx(e, rel=0.01)
        if p == 2:
            first = times
        assert times == pytest.approx(first, rel=1e-9)      # the same for every p: the switch has a port each


def test_the_simulator_agrees_with_the_formula_on_one_switch():
    for p in (2, 5, 8, 64):
        topo = fabrics.star(p, nic=NET.nic)
        for s in SIZES:
            for k, cap in CASES:
                r = sim_ina.allreduce(topo, s, chunks=k, capacity=cap)
                assert r.time_s == pytest.approx(cost.ina_allreduce(p, s, NET.nic, chunks=k, capacity=cap), rel=0.01)
                assert r.switch == "switch"


def test_busbw_doubles_the_rings_at_large_p():
    link = Link(B, 0.0)
    s = 1 << 30
    for p in (64, 256, 1024):
        k = 1024
        ratio = cost.ring_allreduce(p, s, link) / cost.ina_allreduce(p, s, link, chunks=k)
        assert ratio == pytest.approx(2 * (p - 1) / p * k / (k + 1), rel=1e-9)      # (2(p-1)/p S/B) / ((k+1)/k S/B)
        assert ratio > 1.9
    # small p: ring moves 2(p-1)/p = 1 S at p=2, so the switch gains nothing there
    assert cost.ring_allreduce(2, s, link) / cost.ina_allreduce(2, s, link, chunks=1024) < 1.0


def test_a_slow_aggregator_caps_the_rate():
    s, k = 256 << 20, 4096
    wire = Link(B, 0.0)                                   # alpha aside: the limit is a rate
    for cap in (1e9, 4e9, 10e9):                          # all below the 12.5 GB/s port
        t = cost.ina_allreduce(8, s, wire, chunks=k, capacity=cap)
        assert t == pytest.approx(s / min(B, cap), rel=0.01)
        c = s / k                                         # exact: one chunk up and down, every chunk summed
        assert t == pytest.approx(2 * c / B + s / cap, rel=1e-12)
    assert cost.ina_allreduce(8, s, wire, chunks=k, capacity=1e12) == pytest.approx(s / B, rel=0.01)
    # with alpha, a chunk pays it each way: 4096 chunks of 64 KiB are alpha-bound, not aggregator-bound
    t = cost.ina_allreduce(8, s, NET.nic, chunks=k, capacity=10e9)
    assert t == pytest.approx((k + 1) * (ALPHA + s / k / B) + s / k / 10e9, rel=1e-12)   # plus one chunk summed
    assert t > s / 10e9


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="capacity"):
        sim_ina.allreduce(fabrics.star(4), 1024, capacity=0)
    with pytest.raises(ValueError, match="chunks"):
        sim_ina.allreduce(fabrics.star(4), 1024, chunks=0)
    with pytest.raises(ValueError, match="switch"):
        sim_ina.allreduce(fabrics.star(4), 1024, switch="spine9")
    with pytest.raises(ValueError, match="topology"):
        sim_ina.allreduce(fabrics.ring(4), 1024)
    with pytest.raises(ValueError, match="network"):
        ina.switch_network(netlab.network("10Gbit/s", ranks_per_host=2), 4)


def test_the_cli_benches_it_against_torch_and_the_formula(run_cli):
    import json
    code, out, err = run_cli("bench", "allreduce", "--ranks", "3", "--algo", "ina", "--chunks", "4",
                             "--bandwidth", "100Gbit/s", "--latency", "5us", "--sizes", "4K,1M", "--check", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["check"] for r in rows] == ["ok", "ok"]
    for r in rows:
        assert r["time_s"] == pytest.approx(cost.ina_allreduce(3, r["bytes"], NET.nic, chunks=4), rel=0.01)
    code, _, err = run_cli("bench", "broadcast", "--algo", "ina", "--bandwidth", "10Gbit/s")
    assert code == 2 and err.strip().startswith("netlab bench: error: algo:")


def test_on_a_spine_leaf_the_switch_is_the_nearest_and_uplinks_set_the_rate():
    from netlab.sim import placement
    topo = fabrics.spine_leaf(leaves=4, spines=2, ratio=4, ports_per_leaf=8)
    nic = topo.nic
    s, k = 64 << 20, 16
    inside = sim_ina.allreduce(topo, s, 8, chunks=k, placement=placement.place(topo, 8, "packed"))
    assert inside.switch == "leaf0"
    assert inside.time_s == pytest.approx(cost.ina_allreduce(8, s, nic, chunks=k), rel=1e-9)
    # 16 workers, 4 per leaf, summed at spine0: a leaf's one uplink to it carries 8B/(4*2) = B for 4 flows
    spread = sim_ina.allreduce(topo, s, 16, chunks=k, placement=placement.place(topo, 16, "scattered"))
    assert spread.switch.startswith("spine")
    assert spread.up_rate == pytest.approx([nic.bandwidth / 4] * 16)
    assert spread.time_s == pytest.approx(cost.ina_allreduce(16, s, Link(nic.bandwidth / 4, nic.latency), chunks=k),
                                          rel=1e-9)


def _plain(comm):
    try:
        ina.allreduce(comm, None, count=16)
    except ValueError as exc:
        return str(exc)
    return "ran"


def test_a_network_without_the_switchs_ports_is_refused():
    res = netlab.run(_plain, ranks=3, network=NET)                      # one NIC for the switch: a PS, not a switch
    assert all(v.startswith("network: the switch is rank 2") for v in res.values)
