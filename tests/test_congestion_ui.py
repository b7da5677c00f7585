"""Chapter 6's panel runs headless: each setting simulates and draws on its own Figure; bad ones explain."""
from netlab.fabric import jitter, victim
from netlab.figures.congestion import draw_step_times, draw_victim
from netlab.ui.ch6 import CongestionPanel
from matplotlib.figure import Figure


def test_panel_runs_each_setting_and_keeps_it():
    panel = CongestionPanel(senders=8, block="64K", buffer="32K")
    lossy = panel.last
    panel.set(pfc=True, transport="ideal")
    assert panel.last.summary()["drops"] == 0 and lossy.summary()["drops"] > 0
    assert "goodput" in panel.text and "PFC pause" in panel.text and panel.runs == 2
    png = [o for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(png) == 1                                       # one figure, replaced, never appended
    assert len(panel.figure(panel.last).axes) == 2


def test_panel_explains_a_setting_without_pfc_headroom():
    panel = CongestionPanel(senders=2, block="16K")
    before = panel.last
    panel.set(buffer="16K", pfc=True, bandwidth="10Gbit/s")
    assert panel.text.startswith("cannot run this setting: pfc:") and panel.last is before


def test_ecn_threshold_is_greyed_out_for_transports_that_ignore_marks():
    panel = CongestionPanel(senders=2, block="16K", transport="reno")
    assert panel.controls["ecn_k"].disabled
    panel.set(transport="dctcp")
    assert not panel.controls["ecn_k"].disabled


def test_step_time_and_victim_figures_draw_on_figures():
    out = jitter(("dctcp",), rounds=3, senders=2, block=16 * 1024, background=0.2)
    assert len(draw_step_times(Figure(), out).axes) == 1
    assert len(draw_victim(Figure(), {"PFC on": victim(duration=2e-3)}).axes) == 1
