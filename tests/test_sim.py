"""The simulator: max-min against a one-level-at-a-time reference, and the closed-form cost within 1 %
on contention-free fabrics (non-blocking fat-tree, ranks in topology order)."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claims import claim
from netlab import cli, collectives, sim
from netlab.collectives import cost
from netlab.net import fabrics
from netlab.net.topology import Host
from netlab.sim.maxmin import max_min, max_min_rates

SIZES = [1 << 10, 4 << 20, 256 << 20]


def progressive_filling(flow, link, weight, capacity, n):
    """The textbook: raise all unfrozen flows together to the next full link, freeze its flows, repeat."""
    rate, frozen, left = np.zeros(n), np.zeros(n, bool), capacity.astype(float).copy()
    while not frozen.all():
        live = ~frozen[flow]
        load = np.bincount(link[live], weight[live], minlength=capacity.size)
        step = np.min(left[load > 0] / load[load > 0])
        rate[~frozen] += step
        left -= step * load
        full = (load > 0) & (left <= 1e-9 * capacity)
        frozen[flow[live & full[link]]] = True
    return rate


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.integers(1, 8), st.integers(0, 2**31 - 1), st.booleans())
def test_max_min_equals_one_level_at_a_time_progressive_filling(n_flows, n_links, seed, weighted):
    rng = np.random.default_rng(seed)
    flow, link = [], []
    for f in range(n_flows):
        for l in rng.choice(n_links, rng.integers(1, n_links + 1), replace=False):
            flow.append(f)
            link.append(l)
    flow, link = np.array(flow), np.array(link)
    weight = rng.uniform(0.2, 1.0, flow.size) if weighted else np.ones(flow.size)
    capacity = rng.choice([1.0, 2.0, 3.0, 10.0], n_links) * 1e9
    got = max_min(flow, link, weight, capacity, n_flows=n_flows)
    assert got == pytest.approx(progressive_filling(flow, link, weight, capacity, n_flows), rel=1e-9)
    load = np.bincount(link, weight * got[flow], minlength=n_links)
    assert (load <= capacity * (1 + 1e-9)).all()                             # feasible
    for f in range(n_flows):                                                   # and every flow has a full link
        assert any(load[l] >= capacity[l] * (1 - 1e-9) for l in link[flow == f])


def test_max_min_textbook_cases():
    assert max_min_rates([["a"], ["a"]], {"a": 10}) == [5, 5]
    assert max_min_rates([["l1", "l2", "l3"], ["l1"], ["l2"], ["l3"]], {"l1": 10, "l2": 10, "l3": 4}) == [2, 8, 8, 2]


def spray_or_ecmp(algo):
    """Single-path ECMP is contention-free for rings and trees in topology order; the recursive
    algorithms pair distant ranks and collide under any hash, so they need spraying."""
    return "ecmp" if algo in ("ring", "tree", "naive", "scatter_allgather") else "spray"


@pytest.mark.parametrize("collective, algo", [(c, a) for c, algos in collectives.ALGORITHMS.items() for a in algos
                                              if not a.startswith("hierarchical")])
@pytest.mark.parametrize("k", [4, 8])
@claim("ch5.sim-matches-closed-form")
def test_matches_the_closed_form_cost_on_a_non_blocking_fat_tree(collective, algo, k):
    topo = fabrics.fat_tree(k)
    simulator = sim.Simulator(topo, routing=spray_or_ecmp(algo))
    for nbytes in SIZES:
        r = sim.simulate(simulator, collective, algo, nbytes)
        predicted = cost.time(collective, algo, topo.size, r.nbytes, network=topo.network())
        assert r.time_s == pytest.approx(predicted, rel=0.01), f"S={r.nbytes}"
        # no flow below line rate; all-to-all's concurrent schedule has p-1 flows on every port by design
        assert r.slowest_flow == pytest.approx(1 / (topo.size - 1) if algo == "concurrent" else 1.0)


@pytest.mark.parametrize("algo", ["hierarchical", "hierarchical_rail"])
def test_hierarchical_matches_its_formula_on_rail_optimized_servers(algo):
    topo = fabrics.fat_tree(16, host=Host(8, nics=8, rail=True), hosts=8)      # 64 GPUs on one pod's 8 rails
    for nbytes in SIZES:
        r = sim.simulate(topo, "allreduce", algo, nbytes)
        assert r.time_s == pytest.approx(cost.time("allreduce", algo, 64, r.nbytes, network=topo.network()), rel=0.01)


def test_reductions_cost_gamma_per_byte_as_the_formula_says():
    topo = fabrics.fat_tree(4)
    net = topo.network()
    gamma = 1 / 5e9
    for algo in ("ring", "halving_doubling"):
        r = sim.simulate(sim.Simulator(topo, routing="spray", gamma=gamma), "allreduce", algo, 64 << 20)
        net_g = type(net)(net.nic, 1, None, gamma)
        assert r.time_s == pytest.approx(cost.time("allreduce", algo, 16, r.nbytes, network=net_g), rel=0.01)


def test_uniform_sizes_take_the_same_time_by_the_scaled_profile_and_by_waves():
    topo = fabrics.fat_tree(8)
    s = sim.Simulator(topo, placement="shuffled", seed=4)
    src = np.arange(128)
    sig = s._signature(src, (src + 1) % 128)
    sizes = np.full(128, 3e5)
    assert s._fluid(sig, sizes) == pytest.approx(s._waves(sig, sizes), rel=1e-12)
    uneven = sizes * np.linspace(1, 2, 128)
    waves = s._fluid(sig, uneven)
    assert waves.max() >= s._fluid(sig, sizes).max()                            # more bytes, not less time


def test_link_bytes_add_up_to_what_the_ranks_sent():
    topo = fabrics.spine_leaf(4, 2, 2, 4)
    r = sim.simulate(sim.Simulator(topo, placement="shuffled", seed=1), "allreduce", "ring", 1 << 20, record=True)
    sent = r.messages[2].sum()
    assert r.link_bytes[topo.link_kind == 0].sum() == pytest.approx(2 * sent)  # each byte up one NIC, down another
    assert r.utilization.max() <= 1 + 1e-9


def test_contention_slows_a_shuffled_ring_and_the_bottleneck_is_a_fabric_link():
    topo = fabrics.fat_tree(8)
    ordered = sim.simulate(topo, "allreduce", "ring", 64 << 20)
    shuffled = sim.simulate(sim.Simulator(topo, placement="shuffled", seed=0), "allreduce", "ring", 64 << 20)
    assert shuffled.time_s > 2 * ordered.time_s
    assert topo.kind_of(shuffled.bottleneck_link) == "fabric" and topo.kind_of(ordered.bottleneck_link) == "nic"
    assert set(shuffled.time_by_bottleneck_kind()) == {"fabric"}


def test_cli_prints_the_figures_as_json(capsys):
    code = cli.main(["sim", "allreduce", "--topology", "fattree:8", "--ranks", "128", "--algo", "ring",
                     "--size", "16M", "--json"])
    row = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("time_s", "busbw_GBps", "bottleneck", "bottleneck_util", "wall_s", "formula_s"):
        assert key in row
    assert row["time_s"] == pytest.approx(row["formula_s"], rel=0.01)
    code = cli.main(["sim", "allreduce", "--topology", "spineleaf:4:2:4", "--ranks", "32", "--placement",
                     "shuffled", "--seed", "3", "--routing", "spray"])
    assert code == 0 and "bottleneck" in capsys.readouterr().out


@pytest.mark.parametrize("argv, name", [(["--ranks", "0"], "ranks"), (["--topology", "fattree:5"], "topology"),
                                        (["--size", "1Q"], "size"), (["--routing", "random"], "routing"),
                                        (["--placement", "x"], "placement"),
                                        (["--nics-per-host", "3"], "nics-per-host")])
def test_cli_bad_input_is_one_line_naming_the_parameter(capsys, argv, name):
    assert cli.main(["sim", "allreduce", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"error: {name}:" in err


def test_hop_latency_is_paid_once_per_switch_a_message_passes():
    hop = 1e-6
    topo = fabrics.fat_tree(4, hop_latency=hop)
    r = sim.simulate(topo, "allreduce", "ring", 1 << 20)
    # rank order: the wrap-around and pod-crossing messages pass edge, agg, core, agg, edge: 5 switches
    step = topo.nic.latency + 5 * hop + r.nbytes / 16 / topo.nic.bandwidth
    assert r.time_s == pytest.approx(2 * 15 * step, rel=1e-6)


@pytest.mark.parametrize("topo, placement", [(fabrics.ring(8), "ordered"),
                                              (fabrics.torus(2, 4), [0, 1, 2, 3, 7, 6, 5, 4])])   # a snake
def test_a_ring_all_reduce_on_a_direct_network_is_the_formula_when_every_hop_is_one_link(topo, placement):
    r = sim.simulate(sim.Simulator(topo, placement=placement), "allreduce", "ring", 64 << 20)
    assert r.time_s == pytest.approx(cost.time("allreduce", "ring", 8, r.nbytes, network=topo.network()), rel=0.01)
    assert r.placement == ("ordered" if placement == "ordered" else "custom")
