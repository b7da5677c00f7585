"""Packet spraying in the flow simulator, against loads counted by hand on small fabrics.

* one flow sprayed over the k spines of a two-leaf spine-leaf puts 1/k of its bytes on each uplink
  and each downlink, and runs at line rate where one hashed path (half the NIC's rate) halves it;
* a cross-pod permutation on a k=4 fat-tree, sprayed, puts exactly one flow's bytes on every fabric
  link (each edge splits two hosts' flows over two aggregation switches, each aggregation switch two
  halves over two cores): counted on paper, link by link;
* the hierarchical schedules (whose intra-host phases send nothing over the network) run sprayed on
  servers of several GPUs -- they used to stop with numpy's "need at least one array to
  concatenate" -- and take the alpha-beta formula's time, as they do hashed.
"""
import json

import numpy as np
import pytest

from netlab import cli, collectives, sim
from netlab.collectives import cost
from netlab.collectives.schedule import Step
from netlab.net import fabrics
from netlab.net.topology import Host

N = 48 << 20                  # bytes per flow


def one_step(src, dst, n=N):
    src, dst = np.asarray(src), np.asarray(dst)
    return [Step(src, dst, np.zeros(src.size, np.int64), np.full(src.size, n // 4, np.int64), reduce=False)]


def by_label(topo, result):
    return {topo.link_label(l): float(result.link_bytes[l]) for l in range(topo.links)}


@pytest.mark.parametrize("spines", [2, 4, 8])
def test_one_flow_sprayed_over_k_spines_puts_one_kth_on_each_and_runs_at_line_rate(spines):
    topo = fabrics.parse(f"spineleaf:2:{spines}:1", 4)       # 2 hosts a leaf: uplinks of 2 x 100 Gbit/s / k
    r = sim.Simulator(topo, 4, routing="spray").run(one_step([0], [2]))
    load = by_label(topo, r)
    for s in range(spines):
        assert load[f"leaf0->spine{s}"] == pytest.approx(N / spines)
        assert load[f"spine{s}->leaf1"] == pytest.approx(N / spines)
        assert load[f"leaf1->spine{s}"] == load[f"spine{s}->leaf0"] == 0
    assert load["h0->leaf0"] == load["leaf1->h2"] == N
    port = [l for l in range(topo.links) if topo.link_label(l) == "h0->leaf0"][0]
    nic, alpha = float(topo.capacity[port]), float(topo.latency[port])
    assert r.time_s == pytest.approx(alpha + N / nic, rel=1e-9)
    if spines == 2:                                           # one hashed uplink: 100 Gbit/s, the NIC's rate
        return
    hashed = sim.Simulator(topo, 4, routing="ecmp").run(one_step([0], [2]))
    uplink = 2 * nic / spines
    assert hashed.time_s == pytest.approx(alpha + N / uplink, rel=1e-9)


def test_a_cross_pod_permutation_sprayed_on_a_k4_fat_tree_puts_one_flow_on_every_fabric_link():
    topo = fabrics.parse("fattree:4")                        # 16 hosts, 4 pods of 4, 2 per edge switch
    src = np.arange(16)
    dst = (src + 8) % 16                                      # pod p -> pod p + 2: every flow crosses the core
    r = sim.Simulator(topo, 16, routing="spray").run(one_step(src, dst))
    load = by_label(topo, r)
    fabric = [name for l, name in enumerate(map(topo.link_label, range(topo.links))) if topo.kind_of(l) == "fabric"]
    assert len(fabric) == 64
    for name in fabric:
        assert load[name] == pytest.approx(N), name
    for l in range(topo.links):
        if topo.kind_of(l) == "nic":
            assert r.link_bytes[l] == N
    assert r.time_s == pytest.approx(float(topo.latency.max()) + N / 12.5e9, rel=1e-9)   # nothing shared
    assert r.slowest_flow == pytest.approx(1.0)


@pytest.mark.parametrize("algo", ["hierarchical", "hierarchical_rail"])
@pytest.mark.parametrize("gpus", [2, 4])
def test_hierarchical_schedules_run_sprayed_on_multi_gpu_servers_at_the_formulas_time(algo, gpus):
    host = Host(gpus, nics=gpus, rail=True)
    topo = fabrics.parse("spineleaf:4:4:1", 32, host=host)
    collective, algo = collectives.resolve("allreduce", algo)
    r = sim.simulate(sim.Simulator(topo, 32, routing="spray"), collective, algo, 16 << 20)
    formula = cost.time(collective, algo, 32, r.nbytes, network=topo.network())
    assert r.time_s == pytest.approx(formula, rel=1e-6)


def test_the_command_that_failed_with_numpys_words_now_prints_the_formulas_time(capsys):
    argv = ["sim", "allreduce", "--topology", "spineleaf:8:4:1", "--ranks", "256", "--gpus-per-host", "2",
            "--nics-per-host", "2", "--algo", "hierarchical", "--routing", "spray", "--size", "256M", "--json"]
    assert cli.main(argv) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["routing"] == "spray" and row["time_s"] == pytest.approx(row["formula_s"], rel=1e-6)
