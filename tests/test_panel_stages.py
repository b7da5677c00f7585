"""A panel that refines shows a first answer, then the full one in its place; a newer change skips the
rest; a change that waits for a busy kernel says so at once; chapter 3's first answer is the beginning
of the full run (the same numbers at the same steps, measured by running the full run alone)."""
import threading
import time

import ipywidgets as widgets
import pytest

from netlab.ui import panel as panel_mod
from netlab.ui.panel import QUEUED, Panel, new_figure


class Staged(Panel):
    """Two answers per change: a quick one, then the full one; records what it computed."""

    def __init__(self, **kwargs):
        self.computed = []
        self.supersede = False
        super().__init__({"n": widgets.IntSlider(3, 1, 40, description="n")}, **kwargs)

    def render(self, values):
        n = values.n
        for stage in ("first", "full"):
            self.computed.append((n, stage))
            if stage == "first" and self.supersede:
                self._pending = True                     # a newer change arrived while this one ran
            fig = new_figure(2, 2)
            fig.subplots().plot(range(n))
            self.last = (n, stage)
            yield f"{stage} answer for n={n}", fig


def shown_texts(panel):
    seen = []
    panel.out.observe(lambda change: seen.append(
        [o["data"]["text/plain"] for o in change["new"] if "image/png" not in o["data"]]), names="outputs")
    return seen


def test_the_first_answer_is_shown_then_replaced_by_the_full_one():
    p = Staged()
    seen = shown_texts(p)
    p.controls["n"].value = 5
    assert seen == [["first answer for n=5"], ["full answer for n=5"]]     # each replaced, never appended
    assert len(p.out.outputs) == 2 and p.last == (5, "full") and p.stages == 2
    assert 0 < p.first_seconds <= p.seconds and "first answer after" in p.status.value


def test_a_newer_change_skips_the_rest_of_an_older_one():
    p = Staged()
    p.computed.clear()
    p.supersede = True
    seen = shown_texts(p)
    p.controls["n"].value = 6
    assert p.computed == [(6, "first")] and seen == [["first answer for n=6"]] and p.stages == 1
    # The newer change has not run yet: the status says so, never "took" over a first answer.
    assert p.status.value == QUEUED and "took" not in p.status.value
    p.supersede = False
    p._run_pending()                                  # the kernel gets to the newer change
    assert p.last == (6, "full") and "this change took" in p.status.value


def test_a_change_that_waits_for_a_busy_kernel_says_so_then_answers(monkeypatch):
    posted = []

    class BusyLoop:                                   # the main thread is running a cell: nothing runs yet
        def add_callback(self, fn):
            posted.append(fn)

    monkeypatch.setattr(panel_mod, "_main_loop", lambda: BusyLoop())
    p = Staged()
    t = threading.Thread(target=lambda: setattr(p.controls["n"], "value", 9))   # a subshell thread
    t.start()
    t.join()
    deadline = time.monotonic() + 10
    while p.status.value != QUEUED and time.monotonic() < deadline:
        time.sleep(0.02)
    assert p.status.value == QUEUED and "waiting for the running cell" in QUEUED
    posted[0]()                                       # the cell ended: the kernel runs the change
    assert p.last == (9, "full") and "this change took" in p.status.value


def test_a_change_the_kernel_starts_at_once_shows_no_waiting_notice(monkeypatch):
    class IdleLoop:
        def add_callback(self, fn):
            fn()

    monkeypatch.setattr(panel_mod, "_main_loop", lambda: IdleLoop())
    p = Staged()
    t = threading.Thread(target=lambda: setattr(p.controls["n"], "value", 4))
    t.start()
    t.join()
    time.sleep(panel_mod.QUEUE_NOTICE_S + 0.3)
    assert p.status.value != QUEUED and p.last == (4, "full")


def staged_answers(panel, **change):
    answers = []
    panel.out.observe(lambda c: answers.append((panel.last, panel.text)), names="outputs")
    panel.set(**change)
    assert panel.stages == 2 and len(answers) == 2
    return answers


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bsp", "ssp"])
def test_chapter_3s_first_answer_is_the_short_run_it_says_and_under_bsp_the_full_runs_beginning(mode):
    from netlab.ps import run_ps
    from netlab.ui.ch3 import FIRST_STEPS, PSPanel
    full_steps = 4 * FIRST_STEPS
    panel = PSPanel(workers=3, servers=2, steps=full_steps, stragglers=1, mode=mode)
    (first, first_text), (full, full_text) = staged_answers(panel, servers=1)
    assert f"a {FIRST_STEPS}-step run; the {full_steps}-step run follows" in first_text
    assert "first answer" not in full_text
    setting = dict(workers=3, servers=1, sharding="hash", bandwidth="10Gbit/s", mode=mode, staleness=2,
                   stragglers=1, slowdown=4.0, partition_bytes=32_768)
    short = run_ps(steps=FIRST_STEPS, eval_every=max(1, FIRST_STEPS // 8), **setting)       # run apart
    alone = run_ps(steps=full_steps, eval_every=max(1, full_steps // 8), **setting)
    assert first.step_s == short.step_s and first.history == short.history
    assert full.step_s == alone.step_s and full.history == alone.history
    if mode == "bsp":                                          # synchronous: the short run is the long one's start
        at = dict(zip(alone.history["step"], zip(alone.history["time_s"], alone.history["accuracy"])))
        common = [s for s in short.history["step"] if s in at]
        assert len(common) == FIRST_STEPS // max(1, full_steps // 8)
        for step, t, acc in zip(short.history["step"], short.history["time_s"], short.history["accuracy"]):
            if step in at:
                assert (t, acc) == at[step]


@pytest.mark.slow
def test_chapter_4s_first_answer_is_the_beginning_of_the_full_run():
    from netlab.compress.training import run_training
    from netlab.ui.ch4 import FIRST_STEPS, CompressPanel
    full_steps = 2 * FIRST_STEPS
    panel = CompressPanel(method="topk", ranks=2, steps=full_steps, sweep=["100Mbit/s", "100Gbit/s"])
    (first, first_text), (full, _) = staged_answers(panel, ratio=0.03)
    assert f"the first {FIRST_STEPS} of {full_steps} steps" in first_text and first["rows"] is None
    alone = run_training("topk", ranks=2, steps=full_steps, bandwidth="1Gbit/s", error_feedback=True, ratio=0.03)
    r = first["result"]
    assert r.step_s == pytest.approx(alone.step_s, rel=1e-9) and r.bytes_per_step == alone.bytes_per_step
    at = dict(zip(alone.steps, zip(alone.time_s, alone.accuracy)))
    common = [s for s in r.steps if s in at]
    assert common
    for step, t, acc in zip(r.steps, r.time_s, r.accuracy):
        if step in at:
            assert (t, acc) == pytest.approx(at[step], rel=1e-12)
    assert full["result"].steps == alone.steps and full["result"].accuracy == alone.accuracy
    assert len(full["rows"]) == 4
