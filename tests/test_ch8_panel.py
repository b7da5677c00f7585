"""Chapter 8's co-design panel runs headless: its numbers are the flow simulator's and agree with a
closed form written out here, every control changes what it shows, a ratio that cannot matter is
greyed out, and a bad setting is one clear error naming the control."""
import pytest

from netlab import sim
from netlab.net import fabrics
from netlab.net.network import Link
from netlab.sim.placement import place
from netlab.ui import ch8
from netlab.ui.ch8 import HOSTS, PATTERNS, RATIOS, Ch8Panel
from netlab.units import fmt_time, parse_bytes


def png(panel):
    shown = [o["data"]["image/png"] for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(shown) == 1                                      # one figure, replaced, never appended
    return shown[0]


def by_hand(pattern, ratio, placement, hosts, nbytes, bw=12.5e9, a=5e-6, ports=8):
    """The chosen setting counted by hand on 4 leaves of 8: which ranks share a leaf, what leaves it."""
    leaf = [slot // ports for slot in place(fabrics.spine_leaf(4, 2, ratio, ports, nic=Link(bw, a)), hosts, placement)]
    p, uplink = hosts, ports * bw / ratio
    if pattern == "all-to-all":
        m = nbytes // 4 // p * 4                                # whole float blocks
        s = m * p
        per_leaf = [leaf.count(x) for x in set(leaf)]
        worst = max(n * (p - n) / p * s / uplink for n in per_leaf)
        return (p - 1) * a + max((p - 1) / p * s / bw, worst)
    s = nbytes // 4 * 4
    out = [leaf[r] for r in range(p) if leaf[r] != leaf[(r + 1) % p]]        # ring flows leaving a leaf
    f = max([1.0] + [out.count(x) * bw / uplink for x in set(out)])
    return 2 * (p - 1) * a + 2 * (p - 1) / p * s / (bw / f)


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_every_cell_of_the_grid_is_the_simulator_and_the_closed_form(pattern):
    for placement in ("packed", "scattered"):
        for hosts in (16, 32):
            for ratio in (1, 4, 8):
                got = ch8.simulated(pattern, float(ratio), placement, hosts, nbytes=16 << 20, bandwidth="100Gbit/s")["time_s"]
                assert got == pytest.approx(by_hand(pattern, ratio, placement, hosts, 16 << 20), rel=0.01), \
                    (pattern, placement, hosts, ratio)
                assert ch8.predicted(pattern, float(ratio), placement, hosts, nbytes=16 << 20, bandwidth="100Gbit/s") == \
                    pytest.approx(got, rel=0.01)


def test_the_panel_shows_the_simulated_setting():
    panel = Ch8Panel(pattern="all-to-all", ratio=4, placement="packed", hosts=32, size="16M", bandwidth="100Gbit/s")
    topo = fabrics.spine_leaf(4, 2, 4, 8, nic=Link(12.5e9, 5e-6))
    ref = sim.simulate(sim.Simulator(topo, 32, placement=place(topo, 32, "packed"), routing="spray"), "alltoall", "concurrent", parse_bytes("16M"))
    assert panel.error is None and panel.last["chosen"]["time_s"] == ref.time_s
    assert fmt_time(ref.time_s) in panel.text and "cross the spine" in panel.text
    # 8 ranks a leaf: 24 of each rank's 32 blocks leave it
    assert panel.last["chosen"]["spine_share"] == pytest.approx(24 / 31)


def test_every_control_changes_the_figure_and_a_ratio_that_cannot_matter_is_greyed():
    panel = Ch8Panel(hosts=16, size="1M")
    changes = dict(pattern="ring all-reduce", ratio=8, placement="scattered", hosts=24, size="16M",
                   bandwidth="25Gbit/s")
    for name, value in changes.items():
        before, runs = png(panel), panel.runs
        panel.set(**{name: value})
        assert panel.runs == runs + 1 and panel.error is None, panel.text
        assert png(panel) != before, f"{name}: the figure did not change"
    assert not panel.controls["ratio"].disabled
    panel.set(placement="packed", hosts=8)                      # one leaf: nothing crosses the spine
    assert panel.controls["ratio"].disabled and panel.last["chosen"]["spine_share"] == 0
    panel.set(hosts=16)
    assert not panel.controls["ratio"].disabled


def test_the_oversubscribed_all_to_all_slows_and_the_packed_ring_does_not():
    panel = Ch8Panel(hosts=32, size="64M")
    grid = panel.last["grid"]
    slow = {pat: grid[pat, "packed", 4]["time_s"] / grid[pat, "packed", 1]["time_s"] for pat in PATTERNS}
    assert slow["ring all-reduce"] == pytest.approx(1.0)        # one ring flow per leaf: 2 B of uplink carry it
    assert 2.5 < slow["all-to-all"] < 4 * 24 / 31                # 24 of 32 blocks leave, R (p - n)/(p - 1) bound


@pytest.mark.parametrize("bad, name", [(dict(ratio=3), "ratio"), (dict(hosts=12), "hosts"),
                                       (dict(pattern="ps"), "pattern"), (dict(size="3M"), "size"),
                                       (dict(placement="random"), "placement"), (dict(bandwidth="1Gbit/s"), "bandwidth")])
def test_bad_settings_are_one_error_naming_the_control(bad, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        Ch8Panel(**bad)


def test_controls_offer_what_the_module_lists():
    panel = Ch8Panel(hosts=8)
    assert list(panel.controls["ratio"].options) == RATIOS and list(panel.controls["hosts"].options) == HOSTS
