"""Chapter 5's panel runs headless: each setting simulates, draws, and keeps its result; bad ones explain."""
import matplotlib.pyplot as plt
import pytest

from netlab.net import fabrics
from netlab.sim import experiments
from netlab.figures.topology import busbw_scaling
from netlab.ui.ch5 import FabricPanel, describe


def test_panel_simulates_the_chosen_fabric_and_keeps_the_result():
    panel = FabricPanel(k=8, ranks=128, placement="ordered")
    ordered = panel.last
    assert ordered.ranks == 128 and ordered.slowest_flow == 1.0
    assert "bottleneck" in panel.text and "busbw" in panel.text
    panel.set(placement="shuffled", seed=2)
    assert panel.last.time_s > ordered.time_s and panel.last.slowest_flow < 1
    runs = panel.runs
    panel.set(fabric="spine-leaf", ratio=4, gpus=8, nics="single", algo="hierarchical", ranks=256)
    assert panel.runs == runs + 1                                         # six changes, one run
    assert panel.last.topology.name == "spineleaf:8:4:4" and panel.last.algo == "hierarchical"
    assert panel.controls["k"].disabled and not panel.controls["ratio"].disabled


def test_panel_explains_a_setting_that_does_not_fit():
    panel = FabricPanel(k=8, ranks=128)
    before = panel.last
    panel.set(k=4, ranks=1024)
    assert panel.text.startswith("cannot run this setting: ranks:")
    assert panel.last is before
    assert len(panel.out.outputs) == 1                                    # the line replaces the old figure


def test_panel_fabric_reuses_topologies_and_describe_names_the_bottleneck():
    setting = dict(fabric="fat-tree", k=8, ratio=1.0, gpus=1, nics="rail")
    assert experiments.panel_fabric(**setting, ranks=64) is experiments.panel_fabric(**setting, ranks=64)
    assert experiments.panel_fabric(**setting, ranks=64).size == 64      # just enough servers, not all 128
    with pytest.raises(ValueError, match="^ranks:"):
        experiments.panel_fabric(**{**setting, "gpus": 8}, ranks=12)
    with pytest.raises(ValueError, match="^fabric:"):
        experiments.panel_fabric(**{**setting, "fabric": "torus"}, ranks=8)
    rows = experiments.scaling({"k=4": (fabrics.fat_tree(4), "ring")}, scales=(8, 16), nbytes=1 << 20)
    fig = busbw_scaling(rows)
    assert len(fig.axes[0].lines) == 1
    plt.close(fig)
    from netlab import sim
    assert "bottleneck" in describe(sim.simulate(fabrics.fat_tree(4), nbytes=1 << 20))
