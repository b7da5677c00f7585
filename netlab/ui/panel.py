"""The base of every chapter panel: controls -> a run on real ranks -> a few lines and one figure.

Why a base class, and why it does not use pyplot or ``interactive_output``:

* **Threads.** JupyterLab 4.6 sends widget messages over kernel subshells by default, so under
  ipykernel 7 a slider's callback runs on a subshell thread while the main thread may be flushing
  pyplot's figures (matplotlib_inline's ``flush_figures``). pyplot's global state is not
  thread-safe: two threads drawing at once gave half-drawn PNGs and mathtext ``ParseException``s.
  A panel therefore draws on a ``matplotlib.figure.Figure`` it owns (never registered with pyplot),
  renders it to PNG itself, and replaces its Output's contents in one assignment: a figure is
  replaced, never appended, and is complete or absent.
* **Interrupt.** Kernel > Interrupt sends SIGINT, which Python delivers to the main thread only,
  and ipykernel ignores SIGINT outside a handler running there. A callback arriving on another
  thread is therefore handed to the main thread's event loop (``kernel.io_loop``), where the run
  executes with ``default_int_handler`` installed: Interrupt stops the ranks and the panel says so
  in one line. The same hand-off serialises panels with cells, which also run on the main thread.
* **Headless runs.** A panel never captures into its Output (``with out:``, as ``interactive_output``
  does): nbclient answers every captured output on the shell socket while it waits there for the
  cell's reply, which can lose the reply's wake-up and stall the cell to its timeout (jupyter/nbclient
  #312, jupyter_client#1059; ``tests/test_headless_stall.py``). Assigning ``out.outputs`` sends nothing back.
* **Coalescing.** Several changes that arrive while a run is pending collapse into one run with
  the controls' latest values.
* **A busy kernel says so.** A change that arrives on a subshell thread while the main thread is busy
  (a cell running, or the previous change) waits for it; if it has not started after
  ``QUEUE_NOTICE_S``, the status line says "waiting for the running cell" until it does. This needs
  the subshells: where widget messages come on the main thread's own channel (JupyterLab before 4.6,
  classic Notebook, VS Code) the kernel reads a change only once the cell has ended, and nothing
  can be shown before that (docs/instructors.md says so).
* **First answer fast.** A panel whose full answer takes longer than a change should (chapters 3 and
  4 train for dozens of steps) writes ``render`` as a generator over ``refine(steps, first)``: it
  yields a first answer (a run of fewer steps: every number means what it means in the full one, and
  the text says how many steps it covers), then the full answer, each shown in place of the last. A
  newer change that arrives meanwhile skips the rest: the panel answers the latest setting instead
  of finishing an old one.

The one protocol. A chapter's panel says only what is particular to it:

* its controls, declared once: a dict of widgets in display order passed to ``Panel.__init__``, built
  with ``slider``, ``choice``, ``dropdown`` and ``toggle`` so every panel looks alike;
* ``greyed(values)``: the controls that mean nothing at these values, greyed out on every change;
* ``render(values) -> (text, figure or None)``, or a generator of them (``refine``), where ``values``
  is a ``Setting`` of every control's value (``values.ranks``, ``values["ranks"]``): it calls the
  chapter's experiment, keeps the result in ``last`` and draws with a ``netlab.figures`` function.

Tests drive a panel by setting a control's ``value`` from the main thread, which runs at once, or by
calling ``render(Setting(...))``. Left out: pyplot, and anything a chapter runs or draws (the
experiments live with their subjects; the figures in ``netlab.figures``).

One concept: the panel protocol every chapter's widget follows (controls, debounced runs, interrupt, one
figure).
"""
from __future__ import annotations

import base64
import contextlib
import gc
import html
import inspect
import io
import signal
import threading
import time

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..figures.common import figure as new_figure

# Outside a kernel (scripts, tests) callbacks run on whatever thread changed a control; pyplot is not
# involved, but mathtext's parser is shared by every figure, so panels draw one at a time.
_draw_lock = threading.RLock()
INTERRUPTED = "Interrupted: the ranks were stopped. Move a control to run again."
QUEUED = ("<i>waiting for the running cell (or the previous change) to finish: this change runs as soon as "
          "the kernel is free</i>")
REFINING = "<i>first answer shown; the full run is on its way&hellip; (Kernel &gt; Interrupt stops it)</i>"
QUEUE_NOTICE_S = 0.3            # a change not started by then is waiting for the kernel: say so
STYLE = {"description_width": "120px"}
LAYOUT = {"width": "460px"}


class Setting(dict):
    """Every control's value at one change: a mapping (``values["ranks"]``) also read as attributes
    (``values.ranks``); what ``render`` and ``greyed`` are given."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def start_values(start: dict, defaults: dict, panel: str) -> Setting:
    """A panel's first values: `defaults` with what `start` changes, or one clear error naming a key of
    `start` that is not one of the `panel`'s controls."""
    unknown = set(start) - set(defaults)
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not a control of {panel} (it has {', '.join(defaults)})")
    return Setting({**defaults, **start})


def refine(steps: int, first: int) -> list[int]:
    """The runs a change answers with: ``first`` steps, then all ``steps`` (only ``steps`` when that is
    under twice ``first``: a first answer would not come sooner enough to be worth a second run)."""
    return [steps] if steps < 2 * first else [first, steps]


def png_bytes(fig: Figure, dpi: int = 100, tight: bool = True) -> bytes:
    """The figure as PNG; ``tight=False`` keeps the figure's own margins and saves a second draw."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight" if tight else None, facecolor="white",
                pil_kwargs={"compress_level": 1})          # zlib level 1: ~10 ms less a change, ~10 % more bytes
    return buf.getvalue()


def _text_output(text: str) -> dict:
    # HTML that wraps at spaces (a stream output breaks mid-word in JupyterLab); plain text kept for
    # nbval, VS Code and anything that does not render HTML
    body = html.escape(text)
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/plain": text,
                     "text/html": f'<pre class="netlab-panel-text" style="white-space: pre-wrap; '
                                  f'word-break: normal; overflow-wrap: anywhere; margin: 0">{body}</pre>'}}


def _image_output(png: bytes) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<figure>"}}


def _main_loop():
    """The kernel's main-thread event loop (ipykernel), or None outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return getattr(kernel, "io_loop", None)


class Panel:
    """Controls above, one Output below; every change re-runs ``render`` with the latest values."""

    min_height = "480px"
    dpi = 100
    tight = True            # crop to what was drawn (one more draw); False: the figure lays itself out

    def __init__(self, controls: dict, layout: widgets.Widget | None = None, run_now: bool = True):
        self.controls = controls
        self.last = None
        self.error: BaseException | None = None       # the last unexpected exception, for debugging
        self.runs = 0                                 # how many renders finished (tests, benchmarks)
        self.seconds = 0.0                            # how long the last one took (run and figure)
        self.first_seconds = 0.0                      # until its first answer was shown (= seconds unless refined)
        self.stages = 0                               # answers the last change showed (2: a first one, then the full)
        self.out = widgets.Output(layout=widgets.Layout(min_height=self.min_height))
        self.out.add_class("netlab-panel-output")
        self.status = widgets.HTML("")
        self.status.add_class("netlab-panel-status")
        self.text = ""                                # the lines shown with the last figure
        self._pending = False
        self._held, self._dirty = 0, False
        self._lock = threading.Lock()
        self._grey()
        for control in controls.values():
            control.observe(self._changed, names="value")
        self.widget = widgets.VBox([layout or widgets.VBox(list(controls.values())), self.status, self.out])
        self.widget.add_class("netlab-panel")
        if run_now:
            self.refresh()

    # -- what subclasses provide -------------------------------------------------------------------
    def render(self, values: Setting):                           # -> (text, Figure | None), or a generator
        """One change: run the setting, keep its result in ``last``, return its description and figure."""
        raise NotImplementedError("a panel defines render(values)")

    def greyed(self, values: dict) -> dict:
        """{control name: True to grey it out} at these values; a control not named keeps its state."""
        return {}

    def _grey(self) -> None:
        for name, off in self.greyed(self.values()).items():
            self.controls[name].disabled = off

    # -- running --------------------------------------------------------------------------------------
    def values(self) -> Setting:
        return Setting((name, control.value) for name, control in self.controls.items())

    @contextlib.contextmanager
    def hold(self):
        """Change several controls at once: one run when the block ends (if anything changed)."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
        if self._held == 0 and self._dirty:
            self.refresh()

    def set(self, **values) -> None:
        """Set controls by name, then run once: ``panel.set(ranks=8, bandwidth="1Gbit/s")``."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"{sorted(unknown)[0]}: not a control of this panel (it has {', '.join(self.controls)})")
        with self.hold():
            for name, value in values.items():
                self.controls[name].value = value

    def refresh(self) -> None:
        """Run now on this thread with the controls' current values, and show the result (a panel that
        refines shows its first answer, then the full one)."""
        with self._lock:
            self._pending = self._dirty = False
        on_main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if on_main else None
        if on_main:
            signal.signal(signal.SIGINT, signal.default_int_handler)     # Interrupt lands here
        self.status.value = "<i>computing&hellip; (Kernel &gt; Interrupt stops it)</i>"
        # The collector stays off until the new figure is sent: a kernel holds a few hundred thousand
        # objects, and a full collection triggered by the figure's allocations cost ~30 ms a change.
        collecting = gc.isenabled()
        gc.disable()
        t0 = time.perf_counter()
        self.stages = 0
        try:
            try:
                for outputs, more in self._stages():
                    self.text = "\n".join(o["data"]["text/plain"] for o in outputs if "image/png" not in o["data"])
                    self.out.outputs = tuple(outputs)                     # one assignment: replaced, never appended
                    self.stages += 1
                    if self.stages == 1:
                        self.first_seconds = time.perf_counter() - t0
                    if more:
                        self.status.value = REFINING
            finally:
                self.seconds = time.perf_counter() - t0
                self.status.value = ""
                if on_main:
                    signal.signal(signal.SIGINT, previous)
        finally:
            if collecting:
                gc.enable()
        self.runs += 1
        if self._superseded():
            # A newer change is waiting and runs next: what is on screen is a first answer, not this
            # panel's final word, so the status must not read as finished.
            self.status.value = QUEUED
            return
        # What this change cost in the kernel (run + figure), so the time a chapter states can be checked.
        first = f"first answer after {self.first_seconds:.2f} s, " if self.stages > 1 else ""
        self.status.value = (f'<span style="color:#777">this change took {first}{self.seconds:.2f} s in the '
                             'kernel</span>')

    def _outputs(self) -> list[dict]:
        """The last answer's outputs (what ``refresh`` shows when it is done)."""
        outputs = []
        for outputs, _ in self._stages():
            pass
        return outputs

    def _stages(self):
        """(outputs, more to come) for each answer of ``render``: one, or a first answer and the full one.
        A refusal, an interrupt or an error is one answer in place of the rest."""
        answers = None
        try:
            with _draw_lock:
                answers = self.render(self.values())
                staged = inspect.isgenerator(answers)
                current = next(answers) if staged else answers
                while current is not None:
                    text, fig = current
                    png = png_bytes(fig, self.dpi, self.tight) if fig is not None else None
                    self.error = None
                    out = ([_text_output(text)] if text else []) + ([_image_output(png)] if png is not None else [])
                    if not staged or self._superseded():
                        yield out, False
                        return
                    yield out, True                                       # shown while the next one runs
                    current = next(answers, None)
        except KeyboardInterrupt:
            yield [_text_output(INTERRUPTED)], False
        except (ValueError, MemoryError) as exc:
            yield [_text_output(f"cannot run this setting: {exc}")], False
        except Exception as exc:                                          # noqa: BLE001 -- shown, kept
            self.error = exc
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            yield [_text_output(f"error: {type(exc).__name__}: {first}")], False
        finally:
            if inspect.isgenerator(answers):
                answers.close()

    def _superseded(self) -> bool:
        """A newer change is waiting: do not finish refining this one."""
        with self._lock:
            return self._pending

    def _changed(self, change) -> None:
        self._grey()                                                      # at once, whoever runs the change
        if self._held:
            self._dirty = True
            return
        if threading.current_thread() is threading.main_thread():
            self.refresh()
            return
        loop = _main_loop()
        if loop is None:                                                  # no kernel: run where we are
            self.refresh()
            return
        with self._lock:                                                  # coalesce a burst of changes
            if self._pending:
                return
            self._pending = True
        loop.add_callback(self._run_pending)
        notice = threading.Timer(QUEUE_NOTICE_S, self._queued_notice)    # the main thread may be busy
        notice.daemon = True
        notice.start()

    def _queued_notice(self) -> None:
        """Still not started: the kernel's main thread is running something else. Say so at once."""
        with self._lock:                                                  # refresh clears _pending under it
            if self._pending:
                self.status.value = QUEUED

    def _run_pending(self) -> None:
        with self._lock:
            if not self._pending:
                return
        self.refresh()

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def slider(kind, *args, description: str, **kwargs):
    """A slider that reports only on release (each change is a run on real ranks)."""
    return kind(*args, description=description, continuous_update=False, style=STYLE,
                layout=widgets.Layout(**LAYOUT), **kwargs)


def choice(options, value, description: str):
    """A slider over `options` (a SelectionSlider) that reports only on release."""
    return slider(widgets.SelectionSlider, options=options, value=value, description=description)


def dropdown(options, value, description: str, *, style: dict = STYLE, layout: dict = LAYOUT):
    return widgets.Dropdown(options=options, value=value, description=description, style=style,
                            layout=widgets.Layout(**layout))


def toggle(options, value, description: str, *, style: dict = STYLE):
    return widgets.ToggleButtons(options=options, value=value, description=description, style=style)


def columns(controls: dict, left, right, *, left_layout: dict | None = None) -> widgets.HBox:
    """Two columns of the named controls, side by side (``left_layout``: the left column's Layout)."""
    extra = {"layout": widgets.Layout(**left_layout)} if left_layout else {}
    return widgets.HBox([widgets.VBox([controls[n] for n in left], **extra),
                         widgets.VBox([controls[n] for n in right])])
