"""Controls that do not apply are greyed out, come back when they apply again, and a greyed control
does not change the answer (checked by running the setting with the control at two values).

Chapter 5's, 6's, 7's, 8's and 9's own cases are in their panels' tests; here the ones added since:
chapter 1 (one node sends nothing), chapter 3 (one server, no stragglers) and chapter 5 (one GPU a
server, an ordered placement sprayed).
"""
import pytest

from netlab import sim
from netlab.sim.experiments import panel_fabric


def disabled(panel):
    return {name for name, c in panel.controls.items() if c.disabled}


@pytest.mark.slow           # real runs at one and several nodes: about 4 s
def test_one_node_greys_out_the_network_and_its_step_does_not_depend_on_it():
    from netlab.ui.ch1 import StepPanel
    panel = StepPanel(ranks=2, width=128, bandwidth="100Mbit/s")
    assert not {"bandwidth", "latency"} & disabled(panel)
    panel.set(ranks=1)
    assert {"bandwidth", "latency"} <= disabled(panel)
    slow = panel.last
    panel.set(bandwidth="400Gbit/s", latency="1us")
    assert panel.last.comm_s == slow.comm_s == 0 and panel.last.total_s == slow.total_s
    panel.set(ranks=2)
    assert not {"bandwidth", "latency"} & disabled(panel)


@pytest.mark.slow
def test_one_server_greys_out_sharding_and_no_stragglers_greys_out_their_slowdown():
    from netlab.ui.ch3 import PSPanel
    panel = PSPanel(steps=4, workers=2, servers=1, stragglers=0, mode="bsp")
    assert {"sharding", "slowdown", "staleness"} <= disabled(panel)
    before = panel.last
    panel.set(sharding="range", slowdown=8.0)             # both greyed: the same training, step for step
    assert panel.last.step_s == before.step_s and panel.last.server_bytes == before.server_bytes
    panel.set(servers=2, stragglers=1, mode="ssp")
    assert not {"sharding", "slowdown", "staleness"} & disabled(panel)


def ch5(**values):
    from netlab.ui.ch5 import FabricPanel
    panel = FabricPanel.__new__(FabricPanel)              # greyed() reads only the values
    return {name for name, off in FabricPanel.greyed(panel, values).items() if off}


def test_chapter_5_greys_the_nic_design_for_one_gpu_servers_and_the_seed_where_nothing_is_random():
    base = dict(fabric="fat-tree", gpus=1, placement="ordered", routing="spray")
    assert ch5(**base) >= {"nics", "seed", "ratio"}
    assert "nics" not in ch5(**dict(base, gpus=2))
    assert "seed" not in ch5(**dict(base, placement="shuffled"))
    assert "seed" not in ch5(**dict(base, routing="ecmp")) and "seed" not in ch5(**dict(base, routing="adaptive"))


@pytest.mark.parametrize("fabric", ["fat-tree", "spine-leaf"])
@pytest.mark.parametrize("algo", ["ring", "hierarchical", "tree"])
def test_what_chapter_5_greys_out_does_not_change_the_simulated_run(fabric, algo):
    def run(nics, seed, placement="ordered", routing="spray", gpus=1):
        topo = panel_fabric(fabric=fabric, k=8, ratio=4.0, gpus=gpus, nics=nics, ranks=32)
        r = sim.simulate(sim.Simulator(topo, 32, placement=placement, routing=routing, seed=seed), "allreduce", algo, 16 << 20)
        return r.time_s, r.bottleneck_label, r.link_bytes.sum()
    assert run("rail", 0) == run("tor", 0) == run("single", 0) == run("rail", 11)       # both greyed
    assert run("rail", 0, "shuffled", "ecmp") == run("single", 0, "shuffled", "ecmp")   # one GPU: nics greyed
