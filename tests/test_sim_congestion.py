"""The fluid congestion model at scale (netlab/sim/congestion.py, hotspot.py) against closed forms.

References: a lone flow at line rate (size/B + path latency); N flows into one port, lossless,
finish together in N size / B (the port never idles under PFC); DCQCN's own fluid model
(netlab.fabric.fluid, Zhu et al. CoNEXT'16) for the rate after the first cut; the congestion tree
of Guo et al. SIGCOMM'16 (pauses above the hot ToR, victims that never touch the hot port).
"""
import numpy as np
import pytest

from netlab.net import fabrics
from netlab.sim import congestion, hotspot


@pytest.fixture(scope="module")
def tree():
    return fabrics.fat_tree(4)          # 16 hosts, 100 Gbit/s, 5 us per NIC link


@pytest.mark.parametrize("transport", ["ideal", "dcqcn"])
def test_lone_flow_runs_at_line_rate(tree, transport):
    r = congestion.run(tree, [0], [15], [10e6], transport=transport)
    expected = 10e6 / tree.capacity[0] + tree.latency[r.paths[0]].sum()
    assert r.fct[0] == pytest.approx(expected, rel=0.01)
    assert r.drops.sum() == 0 and r.pause_s.sum() == 0


def test_lossless_incast_keeps_the_port_busy(tree):
    n, size = 8, 1e6
    r = congestion.run(tree, np.arange(4, 4 + n), np.zeros(n, int), [size] * n, transport="ideal",
                       pfc=(32e3, 16e3))
    expected = n * size / tree.capacity[0] + tree.latency[r.paths[0]].sum()
    assert np.nanmax(r.fct) == pytest.approx(expected, rel=0.02)
    assert r.drops.sum() == 0                       # lossless: PFC held the excess upstream
    assert r.pause_s.sum() > 0
    # without PFC the same burst overflows the port's buffer
    lossy = congestion.run(tree, np.arange(4, 4 + n), np.zeros(n, int), [size] * n, transport="ideal")
    assert lossy.drops[r.paths[0][-1]] > 0


def test_bytes_are_conserved(tree):
    """Every byte a flow finishes with was sent once or lost and sent again: sent = size + lost."""
    n = 6
    r = congestion.run(tree, np.arange(4, 4 + n), np.zeros(n, int), [300e3] * n, transport="reno",
                       buffer=64e3, ecn=None, rto_min=1e-3)
    assert np.isfinite(r.fct).all()
    assert r.lost.sum() == pytest.approx(r.drops.sum(), rel=1e-9)
    assert r.lost.sum() > 0


def test_reno_incast_collapses_with_a_200ms_rto_and_not_with_200us():
    """Vasudevan et al., SIGCOMM'09: N x 256 KB into a 1 Gbit/s port with a shallow buffer; RTOmin decides."""
    topo = fabrics.fat_tree(4, nic=("1Gbit/s", "25us"))
    n, B = 14, topo.capacity[0]
    goodput = {}
    for rto in (200e-3, 200e-6):
        r = congestion.run(topo, np.arange(2, 2 + n), np.zeros(n, int), [256e3] * n, transport="reno",
                           buffer=32e3, ecn=None, rto_min=rto, dt=5e-6)
        assert r.timeouts.sum() > 0
        goodput[rto] = n * 256e3 / np.nanmax(r.fct) / B
    assert goodput[200e-3] < 0.2 and goodput[200e-6] > 0.9


def test_dcqcn_flows_share_a_port_equally_as_the_reference_fluid_does():
    from netlab.fabric.fluid import dcqcn_fluid
    topo = fabrics.fat_tree(4, nic=("40Gbit/s", "2us"))
    B = topo.capacity[0]
    r = congestion.run(topo, [4, 8], [0, 0], [1e9, 1e9], transport="dcqcn", until=2e-3, record=True,
                       sample=2e-6, dt=2e-6)
    late = r.trace["t"] > 1.5e-3
    ours = r.trace["rate"][late].mean(axis=0)                                  # (2,) bytes/s
    assert ours[0] == pytest.approx(ours[1], rel=0.02)                         # fair between equals
    rtt = 2 * topo.latency[r.paths[0]].sum()
    ref = dcqcn_fluid(2, delay=rtt, duration=2e-3)
    ref_rate = ref.rates[ref.t > 1.5e-3].mean()
    assert ours.mean() == pytest.approx(ref_rate, rel=0.2)                     # same cut and recovery
    assert ours.sum() <= B * 1.001


def test_dcqcn_reaches_max_min_at_steady_state():
    """3 flows into h0 and a 4th sharing the first one's NIC: max-min gives C/3, C/3, C/3, 2C/3.

    DCQCN's first cut overshoots and its additive increase (R_AI per timer) takes about 12 ms at
    40 Gbit/s to climb back; from there the rates sit at the max-min point.
    """
    from netlab.sim.fabric import max_min_rates
    topo = fabrics.fat_tree(4, nic=("40Gbit/s", "2us"))
    r = congestion.run(topo, [4, 8, 12, 4], [0, 0, 0, 1], [1e9] * 4, transport="dcqcn", until=16e-3,
                       record=True, sample=4e-6, dt=4e-6)
    late = r.trace["t"] > 15e-3
    ours = r.trace["rate"][late].mean(axis=0)
    cap = {str(l): float(topo.capacity[l]) for p in r.paths for l in p}
    fair = max_min_rates([[str(l) for l in p] for p in r.paths], cap)
    assert ours == pytest.approx(fair, rel=0.03)


def test_congestion_tree_spreads_pauses_and_slows_victims():
    topo = fabrics.fat_tree(4)
    on, off = hotspot.compare(topology=topo, k=4, senders=8, size=500e3, background=8,
                              background_size=1e6, seed=1)
    assert on.run.drops.sum() == 0 and off.run.drops[off.hot_port] > 0
    assert on.pause_above_hot_tor() > 0 and off.run.pause_s.sum() == 0
    assert not any(off.hot_port in off.run.paths[f] for f in np.flatnonzero(off.background))
    assert on.victims_slowdown(off).max() > 1.2              # some flow that avoids the hot port is slower


def test_same_seed_same_numbers():
    topo = fabrics.fat_tree(4)
    a = hotspot.incast_hotspot(topology=topo, k=4, senders=4, size=200e3, background=6, seed=3)
    b = hotspot.incast_hotspot(topology=topo, k=4, senders=4, size=200e3, background=6, seed=3)
    assert np.array_equal(a.run.fct, b.run.fct) and np.array_equal(a.run.pause_s, b.run.pause_s)
    c = hotspot.incast_hotspot(topology=topo, k=4, senders=4, size=200e3, background=6, seed=4)
    assert not np.array_equal(a.run.fct, c.run.fct)


def test_figure_draws_on_a_figure_object():
    from matplotlib.figure import Figure

    from netlab.figures.congestion import draw_hotspot
    topo = fabrics.fat_tree(4)
    on, off = hotspot.compare(topology=topo, k=4, senders=4, size=200e3, background=4, seed=0)
    fig = Figure(figsize=(9, 3.5))
    draw_hotspot(fig, on, off)
    assert len(fig.axes) == 2


@pytest.mark.parametrize("kw, word", [
    ({"transport": "cubicle"}, "transport"), ({"buffer": -1}, "buffer"), ({"ecn": (10e3, 5e3, 0.01)}, "ecn"),
    ({"ecn": (5e3, 10e3, 1.5)}, "ecn"), ({"pfc": (600e3, 10e3)}, "pfc"), ({"dt": 0}, "dt"),
])
def test_bad_input_names_the_parameter(tree, kw, word):
    with pytest.raises(ValueError, match=word):
        congestion.run(tree, [0], [1], [1e3], **kw)
