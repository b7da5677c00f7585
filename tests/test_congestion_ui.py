"""Chapter 6's panel runs headless: each setting simulates and draws on its own Figure; bad ones explain."""
import numpy as np
import pytest

from netlab.fabric import Congestion, Incast, Victim, jitter, victim
from netlab.figures.congestion import incast_run, step_time_cdf, victim_rate
from netlab.ui.ch6 import CongestionPanel


def bytes_under(line, seconds_per_x: float, bytes_per_s_per_y: float) -> float:
    """The area under a plotted rate curve of equal bins (x: bin centres): the bytes it says were moved."""
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    return float(y.sum() * (x[1] - x[0])) * seconds_per_x * bytes_per_s_per_y


def test_panel_runs_each_setting_and_keeps_it():
    panel = CongestionPanel(senders=8, block="64K", buffer="32K")
    lossy = panel.last
    panel.set(pfc=True, transport="ideal")
    assert panel.last.summary()["drops"] == 0 and lossy.summary()["drops"] > 0
    assert "goodput" in panel.text and "PFC pause" in panel.text and panel.runs == 2
    png = [o for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(png) == 1                                       # one figure, replaced, never appended
    rate, queue = incast_run(panel.last).axes
    # each of the 8 flows' curves moves its whole 64 KB block (the rate integrated over its lifetime)
    link = panel.last.port.rate
    assert len(rate.lines) == 8
    assert [bytes_under(line, 1e-3, link) for line in rate.lines] == pytest.approx([64 * 1024] * 8, rel=1e-9)
    # lossy, the queue never stands above the 32 KB buffer drawn beside it, and reaches it (it dropped)
    _, queue = incast_run(lossy).axes
    q, buffer = queue.lines[0], queue.lines[1]
    assert list(buffer.get_ydata()) == [32.768, 32.768] and 32.768 - 1.5 <= max(q.get_ydata()) <= 32.768


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


def test_step_time_and_victim_figures_draw_what_the_runs_measured():
    out = jitter(("dctcp",), config=Incast(senders=2, block=16 * 1024, rounds=3,
                                           switch=Congestion('reno', buffer=64 * 1024, background=0.2)))
    ax, = step_time_cdf(out).axes
    cdf, ideal = ax.lines
    # the CDF steps through every round's time once, up to all of them; the dashed line is the ideal round
    assert list(cdf.get_xdata()) == pytest.approx(sorted(t * 1e3 for t in out["dctcp"]["times"]))
    assert list(cdf.get_ydata()) == pytest.approx([1 / 3, 2 / 3, 1])
    assert list(ideal.get_xdata()) == pytest.approx([out["dctcp"]["ideal"] * 1e3] * 2)
    run = victim(config=Victim(duration=2e-3))
    ax, = victim_rate({"PFC on": run}).axes
    # F1's curve (Gbit/s over ms) carries the bytes F1 delivered during the run
    assert bytes_under(ax.lines[0], 1e-3, 1e9 / 8) == pytest.approx(run.flows[0].rx_bytes[-1], rel=1e-9)


def test_jitter_keeps_its_runs_only_when_asked():
    """A notebook holds jitter's result for as long as the kernel lives: by default it is the step
    times and their statistics, not the fabrics behind them (15 MB a transport at the chapter's size)."""
    lean = jitter(("dctcp",), config=Incast(senders=2, block=16 * 1024, rounds=3,
                                            switch=Congestion('reno', buffer=64 * 1024, background=0.2)))["dctcp"]
    full = jitter(("dctcp",), config=Incast(senders=2, block=16 * 1024, rounds=3,
                                            switch=Congestion('reno', buffer=64 * 1024, background=0.2)), keep_runs=True)["dctcp"]
    assert "run" not in lean and list(full["run"].step_times) == list(lean["times"])
    assert {k: v for k, v in full.items() if k not in ("run", "times")} == {k: v for k, v in lean.items() if k != "times"}


@pytest.mark.slow           # a round run to the event limit: about 4 s
def test_a_round_past_the_panels_event_limit_is_shown_as_far_as_it_got_and_says_so(monkeypatch):
    import netlab.ui.ch6 as ch6
    monkeypatch.setattr(ch6, "PANEL_EVENTS", 500)
    setting = dict(senders=8, block="64K", bandwidth="1Gbit/s", buffer="32K", transport="reno", ecn_k="default",
                   pfc=False, rto_min="200ms")
    panel = CongestionPanel(**{k: v for k, v in setting.items() if k != "ecn_k"})
    cut = panel.last
    assert not cut.complete and cut.engine.events == 500 and cut.step_times.size == 0
    assert panel.text.startswith("stopped after 500 events") and "python -m netlab congestion incast" in panel.text
    full = ch6.run_setting(setting)                       # the same round, run to its end
    assert full.complete and full.engine.events > 500 and len(full.step_times) == 1
    # the panel showed a prefix of that run: the same drops and queue, up to where it stopped
    assert cut.port.drop_t == full.port.drop_t[:len(cut.port.drop_t)]
    assert cut.port.q_bytes == full.port.q_bytes[:len(cut.port.q_bytes)]
    done = sum(f.done_at is not None for f in cut.flows)
    assert f"{done} of 8 flows finished" in panel.text
    panel.set(senders=2, block="16K")                       # a small round finishes within the limit
    assert panel.last.complete and panel.text.startswith("goodput")
