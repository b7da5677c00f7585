"""Packed vs scattered placement on an oversubscribed spine-leaf: packed is never slower, and
scattered is slower by the factor the oversubscription predicts (the ring's closed form at B/f)."""
import pytest

from netlab.collectives import cost
from netlab.net import fabrics
from netlab.net.network import Link
from netlab.sim import placement

S = 64 << 20


def test_packed_fills_the_fewest_leaves_and_scattered_deals_round_robin():
    topo = fabrics.spine_leaf(leaves=4, spines=2, ratio=4, ports_per_leaf=8)
    leaf = placement.leaf_of(topo)
    packed, scattered = placement.place(topo, 12, "packed"), placement.place(topo, 12, "scattered")
    assert len(set(leaf[packed].tolist())) == 2                       # ceil(12 / 8)
    assert len(set(leaf[scattered].tolist())) == 4
    assert [leaf[scattered].tolist().count(x) for x in sorted(set(leaf.tolist()))] == [3, 3, 3, 3]
    assert len(set(packed.tolist())) == len(set(scattered.tolist())) == 12


@pytest.mark.parametrize("leaves, spines, ports, ratio, hosts, f", [
    (4, 2, 8, 4, 16, 2.0),        # 4 flows per leaf up 8B/4 = 2B of uplinks: B/2 each
    (4, 2, 8, 4, 32, 4.0),        # 8 flows per leaf, 2B of uplinks: B/4 (packed: the same leaves, neighbours local)
    (4, 4, 4, 2, 16, 2.0),        # 4 flows per leaf up 4B/2 = 2B
    (2, 2, 8, 2, 8, 1.0),         # 4 flows per leaf up 8B/2 = 4B: not in the way
])
def test_scattered_is_slower_by_the_oversubscription(leaves, spines, ports, ratio, hosts, f):
    topo = fabrics.spine_leaf(leaves=leaves, spines=spines, ratio=ratio, ports_per_leaf=ports)
    r = placement.compare(topo, hosts, S)
    nic = topo.nic
    packed = cost.ring_allreduce(hosts, S, nic)
    assert r["packed"]["allreduce_s"] == pytest.approx(packed, rel=0.01)
    assert r["scattered"]["allreduce_s"] == pytest.approx(cost.ring_allreduce(hosts, S, Link(nic.bandwidth / f,
                                                                                          nic.latency)), rel=0.01)
    assert placement.uplink_factor(hosts, leaves, ports, ratio) == f


def test_packed_is_never_slower():
    for ratio in (1, 2, 4, 8):
        topo = fabrics.spine_leaf(leaves=4, spines=2, ratio=ratio, ports_per_leaf=8)
        for hosts in (2, 3, 5, 8, 9, 13, 16, 24, 32):
            r = placement.compare(topo, hosts, 8 << 20, compute_s=0.01)
            assert r["packed"]["allreduce_s"] <= r["scattered"]["allreduce_s"] * (1 + 1e-9), (ratio, hosts)
            assert r["packed"]["step_s"] == pytest.approx(0.01 + r["packed"]["allreduce_s"])


def test_bad_input_is_one_clear_error():
    topo = fabrics.spine_leaf(leaves=2, spines=2, ratio=2, ports_per_leaf=4)
    with pytest.raises(ValueError, match="how"):
        placement.place(topo, 4, "random")
    with pytest.raises(ValueError, match="hosts"):
        placement.place(topo, 9, "packed")
    with pytest.raises(ValueError, match="compute_s"):
        placement.compare(topo, 4, compute_s=-1)
