"""Panels are right whatever thread a widget callback runs on (JupyterLab 4.6 sends widget messages
over kernel subshells), the rank pool serialises concurrent users, and Interrupt stops a panel's run.

References: a figure is complete when its PNG decodes to the size the figure asks for and the
pixels drawn equal those of the same figure drawn alone; concurrent runs must return what each
would return alone; an interrupted run must end in seconds, not when its ranks finish.
"""
import base64
import io
import os
import threading
import time

import ipywidgets as widgets
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest

import netlab
from netlab.ui import panel as panel_mod
from netlab.ui.panel import INTERRUPTED, Panel, new_figure



class Curve(Panel):
    """A small panel whose figure uses mathtext (the part of matplotlib that broke under threads)."""

    def __init__(self, **kwargs):
        super().__init__({"n": widgets.IntSlider(3, 1, 40, description="n")}, **kwargs)

    def render(self, values):
        n = values.n
        fig = new_figure(4, 3)
        ax = fig.subplots()
        ax.plot(np.arange(50), np.sin(np.arange(50) / n), label=r"$\sin(x / n)$")
        ax.set(xlabel=r"$x$ (steps)", ylabel=r"$\mathrm{value}$", title=f"n = {n}")
        ax.legend()
        self.last = n
        return f"n = {n}", fig


def png_of(panel):
    images = [o for o in panel.out.outputs if "image/png" in o["data"]]
    assert len(images) == 1, "one figure, replaced rather than appended"
    return mpimg.imread(io.BytesIO(base64.b64decode(images[0]["data"]["image/png"])), format="png")


@pytest.mark.slow                       # many threads of figures
def test_figures_drawn_from_many_threads_are_whole_and_replaced():
    alone = {}
    reference = Curve()
    for n in (5, 9, 13, 17):
        reference.set(n=n)
        alone[n] = png_of(reference)
    panels = [Curve() for _ in range(4)]
    errors = []

    def drive(p, n):
        try:
            for _ in range(2):                        # a second round replaces a figure the first one drew
                p.controls["n"].value = n
                p.controls["n"].value = 1
                p.controls["n"].value = n
        except Exception as exc:                      # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(p, n)) for p, n in zip(panels, alone)]
    for t in threads:
        t.start()
    for _ in range(20):                               # meanwhile the main thread uses pyplot, as a cell does
        fig, ax = plt.subplots()
        ax.set_title(r"$\alpha + \beta$")
        fig.canvas.draw()
        plt.close(fig)
    for t in threads:
        t.join()
    assert errors == []
    for p, n in zip(panels, alone):
        assert p.error is None and p.text == f"n = {n}"
        np.testing.assert_array_equal(png_of(p), alone[n])


def test_a_callback_on_another_thread_runs_on_the_main_thread_once_per_burst(monkeypatch):
    posted = []

    class Loop:                                       # stands in for the kernel's main-thread io_loop
        def add_callback(self, fn):
            posted.append(fn)

    monkeypatch.setattr(panel_mod, "_main_loop", lambda: Loop())
    p = Curve()
    runs, seen = p.runs, []
    original = p.render
    p.render = lambda v: (seen.append(threading.current_thread() is threading.main_thread()), original(v))[1]

    def burst():
        for n in (4, 5, 6, 7):
            p.controls["n"].value = n

    t = threading.Thread(target=burst)
    t.start()
    t.join()
    assert p.runs == runs and len(posted) == 1        # nothing ran on the callback's thread; one hand-off
    posted[0]()                                       # the kernel's loop runs it on the main thread
    assert seen == [True] and p.last == 7 and p.runs == runs + 1


def test_set_changes_several_controls_with_one_run_and_names_a_wrong_one():
    p = Curve()
    runs = p.runs
    p.set(n=8)
    assert p.runs == runs + 1 and p.last == 8
    with pytest.raises(ValueError, match="^m: not a control"):
        p.set(m=3)


def test_errors_are_one_line_in_place_of_the_figure():
    class Broken(Curve):
        def render(self, values):
            n = values.n
            if n == 2:
                raise ValueError("n: two is not allowed")
            if n == 3:
                raise RuntimeError("rank 1 raised\n\n--- traceback ---\nlong lines")
            return super().render(values)

    p = Broken(run_now=False)
    p.set(n=2)
    assert p.text == "cannot run this setting: n: two is not allowed" and len(p.out.outputs) == 1
    p.set(n=3)
    assert p.text == "error: RuntimeError: rank 1 raised" and isinstance(p.error, RuntimeError)
    p.set(n=4)
    assert p.error is None and len(p.out.outputs) == 2


def _ranks_plus(comm, k):
    time.sleep(0.05)
    return comm.rank + k


@pytest.mark.slow
def test_the_pool_serialises_concurrent_users_even_when_it_must_grow():
    """Two threads, one on 2 ranks and one on 6 (which replaces the pool): every run is whole."""
    results, errors = [], []

    def user(ranks, k):
        try:
            for _ in range(3):
                results.append((ranks, k, netlab.run(_ranks_plus, k, ranks=ranks).values))
        except Exception as exc:                      # noqa: BLE001
            errors.append(exc)

    netlab.shutdown()
    threads = [threading.Thread(target=user, args=(2, 10)), threading.Thread(target=user, args=(6, 100))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 6
    for ranks, k, values in results:
        assert values == [r + k for r in range(ranks)]


jupyter_client = pytest.importorskip("jupyter_client")
from conftest import execute  # noqa: E402


SLOW_PANEL = '''
import threading, time, ipywidgets as widgets, netlab
from netlab.ui.panel import Panel

def slow(comm, seconds):
    if seconds and comm.rank == 0:
        open(STARTED, "w").close()                    # the long run has reached the ranks
    time.sleep(seconds)
    return comm.rank

class Slow(Panel):
    def __init__(self):
        super().__init__({"seconds": widgets.IntSlider(0, 0, 600)})
    def render(self, values):
        seconds = values.seconds
        return f"ran {netlab.run(slow, seconds, ranks=2, timeout=900).values}", None

panel = Slow()
print(panel.text)
# a widget message arriving on a subshell thread, as under JupyterLab 4.6's defaults
threading.Thread(target=lambda: setattr(panel.controls["seconds"], "value", 300)).start()
'''


@pytest.mark.slow
def test_interrupt_stops_a_panel_whose_callback_came_from_another_thread(tmp_path):
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=os.path.dirname(__file__))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        started = tmp_path / "started"
        status, out, _ = execute(kc, f"STARTED = {str(started)!r}\n" + SLOW_PANEL)
        assert status == "ok" and out.strip() == "ran [0, 1]"
        deadline = time.monotonic() + 120             # until the 300 s run is on the main thread, in its ranks
        while not started.exists() and time.monotonic() < deadline:   # (a guard, not a bound: the checks
            time.sleep(0.05)                                             # below decide, as after a sleep)
        km.interrupt_kernel()                         # what Kernel > Interrupt does
        # the run had 300 s to go: the panel's text saying it was interrupted, and the next run's values,
        # are what an interrupt gives and a wait does not (no clock is read)
        status, out, _ = execute(kc, "print(panel.text)\nprint(netlab.run(lambda c: c.rank * 2, ranks=2).values)")
        assert status == "ok" and out.splitlines() == [INTERRUPTED, "[0, 2]"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
