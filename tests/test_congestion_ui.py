"""Chapter 6's panel runs headless: each setting simulates and draws on its own Figure; bad ones explain."""
from netlab.fabric import jitter, victim
from netlab.fabric.figures import draw_step_times, draw_victim
from netlab.ui.ch6 import CongestionPanel
from matplotlib.figure import Figure


def setting(panel, **change):
    values = {name: w.value for name, w in panel.controls.items()}
    values.update(change)
    return values


def test_panel_runs_each_setting_and_keeps_it(capsys):
    panel = CongestionPanel(senders=8, block="64K", buffer="32K")
    panel.update(**setting(panel))
    lossy = panel.last
    panel.update(**setting(panel, pfc=True, transport="ideal"))
    assert panel.last.summary()["drops"] == 0 and lossy.summary()["drops"] > 0
    out = capsys.readouterr().out
    assert "goodput" in out and "PFC pause" in out
    assert len(panel.figure(panel.last).axes) == 2


def test_panel_explains_a_setting_without_pfc_headroom(capsys):
    panel = CongestionPanel(senders=2, block="16K")
    before = panel.last
    panel.update(**setting(panel, buffer="16K", pfc=True, bandwidth="10Gbit/s"))
    assert "cannot run this setting: pfc:" in capsys.readouterr().out and panel.last is before


def test_step_time_and_victim_figures_draw_on_figures():
    out = jitter(("dctcp",), rounds=3, senders=2, block=16 * 1024, background=0.2)
    assert len(draw_step_times(Figure(), out).axes) == 1
    assert len(draw_victim(Figure(), {"PFC on": victim(duration=2e-3)}).axes) == 1
