"""The same schedule on real ranks (gloo, virtual time) and in the simulator, on the same small topology:
the same messages (Trace.message_pattern) and the same time within 1 %."""
import pytest

import netlab
from netlab import collectives, sim
from netlab.collectives.schedule import execute
from netlab.net import fabrics
from netlab.sim.compare import side_by_side
from netlab.sim.traffic import parameter_server

SIZES = [1 << 10, 1 << 20, 64 << 20]


@pytest.fixture(scope="module", autouse=True)
def pool():
    netlab.get_cluster(8)


def agree(d):
    assert d["same_pattern"], f"{d['algo']}: the simulator assumed other messages than the ranks sent"
    assert d["sim_s"] == pytest.approx(d["real_s"], rel=0.01), f"{d['algo']} S={d['bytes']}"


@pytest.mark.parametrize("algo", list(collectives.ALGORITHMS["allreduce"]))
@pytest.mark.parametrize("ranks", [6, 8])
def test_allreduce_on_one_link_class(algo, ranks):
    net = netlab.network("100Gbit/s", "5us")
    for nbytes in SIZES:
        agree(side_by_side(net, ranks, "allreduce", algo, nbytes=nbytes))


@pytest.mark.parametrize("algo", ["ring", "tree", "hierarchical", "hierarchical_rail", "halving_doubling"])
@pytest.mark.parametrize("gamma", [0.0, 1 / 5e9])
def test_hosts_with_a_fast_intra_link_and_a_nic(algo, gamma):
    """Two link classes on the real ranks (ranks_per_host, intra_preset) and in the simulator."""
    net = netlab.network("100Gbit/s", "5us", ranks_per_host=4, intra="NVLink3", gamma=gamma)
    for nbytes in SIZES:
        d = side_by_side(net, 8, "allreduce", algo, nbytes=nbytes)
        agree(d)
        kinds = d["sim"].time_by_bottleneck_kind()
        if algo.startswith("hierarchical"):
            assert set(kinds) == {"intra", "nic"}                       # both classes set the pace somewhere


@pytest.mark.parametrize("collective", ["broadcast", "reduce", "allgather", "reduce_scatter", "alltoall"])
def test_other_collectives(collective):
    net = netlab.network("25Gbit/s", "10us")
    for algo in collectives.ALGORITHMS[collective]:
        for ranks in (5, 8):
            agree(side_by_side(net, ranks, collective, algo, nbytes=1 << 20))


def _ps(comm, count, servers):
    start = comm.now()
    execute(comm, None, list(parameter_server(comm.world_size, count, servers)), element_size=4)
    return comm.now() - start


def test_parameter_server_with_one_server_is_the_same_hotspot_on_both():
    net = netlab.network("100Gbit/s", "5us")
    p, count = 8, 1 << 20
    res = netlab.run(_ps, count, 1, ranks=p, network=net)
    r = sim.Simulator(fabrics.from_network(net, p), p).run(parameter_server(p, count, 1), 4, record=True)
    assert r.message_pattern() == res.trace.message_pattern()
    assert r.time_s == pytest.approx(max(res.values), rel=0.01)
    assert r.time_s == pytest.approx(2 * (p - 1) * (5e-6 + 4 * count / 12.5e9), rel=1e-9)   # BytePS, k = 1
    topo = r.topology
    assert topo.link_label(r.step_bottleneck[0]) == "switch->h0"        # push: the server's downlink
    assert topo.link_label(r.step_bottleneck[1]) == "h0->switch"        # pull: its uplink
