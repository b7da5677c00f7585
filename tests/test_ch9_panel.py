"""Chapter 9's panel runs headless: each setting runs the fabric and draws one figure; the text states the
run's own numbers; greyed controls mean nothing; a long setting stops at the panel's event budget."""
from dataclasses import replace

from netlab.fabric import ethernet
from netlab.figures.ethernet import (delivery_over_time, fabric_run, framing_efficiency, link_loads, plane_bars,
                                     queue_over_time)
from netlab.ui import ch9
from netlab.ui.ch9 import EthernetPanel, run_setting


def test_each_change_runs_the_fabric_and_replaces_one_figure():
    panel = EthernetPanel(senders=7)
    hashed = panel.last
    panel.set(multipath="spray")
    sprayed = panel.last
    assert sprayed.time_s < hashed.time_s and panel.runs == 2
    assert f"done in" in panel.text and "busiest switch link" in panel.text
    png = [o for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(png) == 1 and len(fabric_run(panel.last).axes) == 3
    again = run_setting(dict(topology="fat-tree k=4", traffic="ring step", multipath="spray", transport="nscc",
                             senders=7))
    assert again.time_s == sprayed.time_s                      # the panel's run, as documented


def test_greyed_controls_mean_nothing_and_refused_settings_say_why():
    panel = EthernetPanel(topology="one switch", traffic="incast", transport="reno", senders=7, buffer="16K")
    assert panel.controls["trim"].disabled and panel.controls["multipath"].disabled
    assert panel.controls["failure"].disabled
    panel.set(trim=True)                                                   # greyed: not applied
    assert panel.last.summary()["trims"] == 0 and not panel.text.startswith("cannot")
    panel.set(transport="nscc")
    assert not panel.controls["trim"].disabled and panel.last.summary()["trims"] > 0
    assert "trims" in panel.text


def test_a_failure_falls_within_the_run_and_a_long_run_stops_at_the_budget(monkeypatch):
    r = run_setting(dict(topology="spine-leaf (4 spines)", traffic="incast", transport="nscc", trim=True,
                         multipath="reps", senders=7, rto_min="1ms", failure="a link"))
    assert r.complete and r.network.failures[0][0].at < r.time_s
    monkeypatch.setattr(ch9, "PANEL_EVENTS", 2000)
    panel = EthernetPanel(senders=3)
    assert not panel.last.complete and panel.text.startswith("stopped after")


def test_the_chapters_figures_draw_on_figures():
    a = ethernet.ring_step(4, 64 * 1024,
                           switch=replace(ethernet.RING, topology="spineleaf:2:2:1", multipath="spray"))
    b = ethernet.ring_step(4, 64 * 1024,
                           switch=replace(ethernet.RING, topology="spineleaf:2:2:1", multipath="ecmp"))
    assert len(link_loads({"spray": a, "ecmp": b}).axes) == 2
    assert len(queue_over_time({"spray": a}).axes) == 1
    assert len(delivery_over_time({"spray": a}, line_rate=ethernet.GBIT, at=1e-4).axes) == 1
    assert len(plane_bars({"a": 0.9, "b": 0.0}).axes) == 1
    assert len(framing_efficiency({"tcp": ([1500, 9000], [0.94, 0.99])}).axes) == 1


def test_on_one_switch_the_panel_shows_the_host_links_and_the_incast_receivers_carries_every_flow():
    panel = EthernetPanel(topology="one switch", traffic="incast", transport="rccc", senders=7, buffer="256K")
    ax = fabric_run(panel.last).axes[0]
    bars = sorted((p.get_height() for p in ax.patches), reverse=True)
    assert len(bars) == 2 * 8 and "16 host links" in ax.get_xlabel()                # both directions of 8
    assert bars[0] == 7 and bars[1:8] == [1] * 7 and bars[8:] == [0] * 8    # 7 senders' blocks into one link
