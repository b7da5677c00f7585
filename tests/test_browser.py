"""Every chapter's panels in a real browser: JupyterLab with its default settings, headless Chromium.

nbval runs a chapter's cells in a kernel; a student runs them in JupyterLab, where a widget callback
may run on another kernel thread ("Kernel Comms over subshells", on by default in JupyterLab 4.6) and
Kernel > Interrupt is one click away. This test does what a student does: opens each chapter, runs
its cells, then on every panel presses an arrow key on a slider, drags another slider, and picks an
option in a menu or toggle, and after each change checks what the panel shows:
- the text or the figure changed;
- no output in the notebook shows an error, a traceback or a widget that failed to display;
- the figure is replaced, not appended (same number of images as before);
- the figure is drawn whole: a decoded PNG of about the first one's width and ink, with ink in both
  halves and dark pixels for text and axes (a figure drawn by two threads at once is blank, half
  drawn or a traceback).
Then it moves each panel through its regimes (tests/browser_regimes.py, read from the panel class's
own greyed()): every option of a menu or toggle that changes which controls apply (chapter 5's three
routing modes and two fabrics, chapter 7's seven scenarios, chapter 9's topologies and transports, ...;
one per greyed outcome where a menu has more than seven, as chapter 4's methods), and the slider values
where controls grey out (one node in chapters 1 and 7, one server or no stragglers in chapter 3). After
each of these changes, besides the checks above: the control shows the value, and the page greys out
exactly the controls greyed() names at the setting the page shows (so each is seen greyed, then enabled
again when it applies). The arrow key and the option of the first part are left to the walk where it
moves a slider with arrow keys or picks an option in a control of the same kind (the same message, the
same run on the kernel's main thread, the same figure replaced), and the arrow key in chapter 4 to the
change after the Interrupt (an arrow key on a slider, checked the same way); the drag is always made.
Which cells: nbval executes every cell of every chapter, top to bottom (make test runs it), so an error
in a cell is found there. This test runs the cells the chapter's widgets depend on, found by reading
the cells (tests/panel_cells.py: every cell that shows a panel or a question, every earlier cell that
defines or changes a name those use, transitively, every cell with a magic or anything else the
reading cannot follow, and every cell's imports), in a copy of the chapter beside it with all its
text: Run All of the whole chapter in the browser repeated nbval's work (176 of 403 s, chapter 4's
trainings and sweeps 48 s), and no panel reads what the rest computes. The panels then start from the
set-up cell, as for a student who goes straight to them. The cells run are listed in the timings.
After a worker's first chapter, the next one is opened in the JupyterLab the page shows (the chapter
before saved and closed, File > Open from Path...), not by loading JupyterLab again.
A change is over when the panel's status line says "this change took ..." (written after its last
figure) and nothing has changed for 0.3 s; for 1.5 s where the status does not tell, or where a slider
was moved by several key presses (ipywidgets sends the later values after the kernel answered the first).
In chapter 4 it interrupts a computing panel from the toolbar and checks the interrupt lands (the
panel says so in one line, not a traceback) and that the next change works.

A screenshot of a panel after each change that failed a check goes to $NETLAB_SCREENSHOTS (default
tests/.screenshots/), with the failing figure's PNGs; NETLAB_SCREENSHOTS_ALL=1 takes one after every change.
Each chapter's seconds, phase by phase, go to timings-chNN.txt there (and to stdout: pytest -s);
NETLAB_BROWSER_TRACE=1 prints every read of the panel while a change is awaited.
Skips with one line of reason where Chromium or Playwright is missing (`.ci/run` installs both as root).
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

from browser_driver import ROOT, Browser, JupyterLab, Notebook, Snapshot, unavailable
from panel_cells import write_widget_copy
from browser_regimes import controls_of, from_page, greyed, index_of, panel_class, regimes, shadow, walk

pytestmark = pytest.mark.slow             # a third of the whole suite: JupyterLab and Chromium per chapter

CHAPTERS = sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb"))
INTERRUPT_IN = {"04_gradient_compression.ipynb"}       # its panel computes for seconds: time to interrupt
SHOTS = Path(os.environ.get("NETLAB_SCREENSHOTS", ROOT / "tests" / ".screenshots"))
EVERY_SHOT = os.environ.get("NETLAB_SCREENSHOTS_ALL", "") not in ("", "0")


class Clock:
    """Where a chapter's seconds go: {phase: [times, seconds]}, printed after the chapter (pytest -s) and
    written to SHOTS/timings-<chapter>.txt."""

    def __init__(self):
        self.phases = {}

    @contextlib.contextmanager
    def __call__(self, phase):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.add(phase, time.monotonic() - t0)

    def add(self, phase, secs):
        n, total = self.phases.get(phase, (0, 0.0))
        self.phases[phase] = (n + 1, total + secs)

    def waited(self, panel, kind):
        """A wait_change's seconds split: until the panel showed something new, until it was done, the quiet period."""
        w = panel.last_wait
        new = w["new_s"] if w["new_s"] is not None else w["s"]
        done = w["done_s"] if w["done_s"] is not None else w["s"]
        self.add(f"{kind} wait: until new", new)
        self.add(f"{kind} wait: new to done", max(0.0, done - new))
        self.add(f"{kind} wait: quiet period", w["s"] - done)
        self.add(f"{kind} wait: reads", 0)
        n, total = self.phases[f"{kind} wait: reads"]
        self.phases[f"{kind} wait: reads"] = (n, total + w["reads"])

    def report(self, title, wall) -> str:
        rows = [f"{title}: {wall:.1f} s"]
        for phase, (n, secs) in self.phases.items():
            unit = "" if phase.endswith("reads") else " s"
            rows.append(f"  {phase:<34} {n:>3} x  {secs:7.1f}{unit}")
        parts = sum(v for p, (_, v) in self.phases.items()             # (all): a sum of parts listed too
                    if not p.endswith(("reads", "(all)")) and not p.startswith("fixture"))
        rows.append(f"  {'(other: reads, checks of Run All)':<34}       {wall - parts:7.1f} s")
        return "\n".join(rows)


STARTUP = {}                                           # the fixtures' start-up seconds, reported once

# No xdist_group: under `pytest -n 2 --dist loadgroup` the chapters are spread over the workers one by one,
# and each worker that gets one starts its own JupyterLab and Chromium (the fixtures below: about 10 s of
# CPU and 0.9 GB; their own port, temporary folders and browser profile; the screenshots and timings are
# named by chapter). One group would make the file one unit of 5-7 minutes that the scheduler cannot split,
# whenever it starts; apart, the longest unit is chapter 4 (2-3 minutes). JupyterLab's server lasts the
# worker's session, not the module: a worker runs other files between its chapters, and a module fixture
# was started again for each of the nine chapters. Chromium cannot: Playwright's sync API keeps its event
# loop running in the thread while it is started, and every later test there that calls asyncio.run (an
# nbclient run, a kernel client) would fail.


@pytest.fixture(scope="session")
def lab():
    reason = unavailable()
    if reason:
        pytest.skip(f"no browser test: {reason}")
    t0 = time.monotonic()
    with JupyterLab() as server:
        STARTUP["fixture: JupyterLab start"] = time.monotonic() - t0
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    t0 = time.monotonic()
    with Browser() as b:
        STARTUP["fixture: Chromium start"] = time.monotonic() - t0
        yield b


def figure_problems(snap: Snapshot, first: Snapshot) -> list[str]:
    """What is wrong with the figures a panel shows, judged against the panel's first figures."""
    if "cannot run this setting" in snap.text and not snap.imgs:
        return []                                      # a setting the panel refuses, in words: fine
    problems = []
    if len(snap.imgs) != len(first.imgs):
        problems.append(f"shows {len(snap.imgs)} figure(s) where it first showed {len(first.imgs)}"
                        + (" (appended, not replaced)" if len(snap.imgs) > len(first.imgs) else ""))
    for i, (fig, ref) in enumerate(zip(snap.figures, first.figures)):
        if fig is None:
            problems.append(f"figure {i} is not a PNG")
            continue
        if fig.ink < 0.01:
            problems.append(f"figure {i} is blank ({fig.ink:.1%} of pixels drawn)")
        elif ref is not None:
            # a part is missing when its ink fell below a quarter of the first figure's and it has next
            # to no dark pixels (axes, ticks, titles: 0.2 % of a sixth of a figure is one axis line): data
            # can leave a part nearly white (a run that diverged early, a bar chart of zeros), but a part
            # a figure drew keeps its lines and words; one left undrawn is white
            missing = [(r, c) for r in range(2) for c in range(3)
                       if ref.grid_ink[r][c] > 0.01 and fig.grid_ink[r][c] < 0.25 * ref.grid_ink[r][c]
                       and fig.grid_dark[r][c] < min(0.002, 0.25 * ref.grid_dark[r][c])]
            if missing:
                where = ", ".join(f"{('top', 'bottom')[r]} {('left', 'middle', 'right')[c]}" for r, c in missing)
                problems.append(f"figure {i} is half drawn: nearly empty at {where}, where the first figure was drawn")
        if fig.edge_ink > 0.02:
            problems.append(f"figure {i} is cut off at its edges ({fig.edge_ink:.0%} of its 2-px frame drawn)")
        if fig.dark < 0.001:
            problems.append(f"figure {i} has no text or lines ({fig.dark:.2%} dark pixels)")
        if ref is not None and not 0.6 < fig.width / ref.width < 1.6:
            problems.append(f"figure {i} is {fig.width} px wide where the first was {ref.width} px")
        if ref is not None and ref.ink > 0 and not 0.33 < fig.ink / ref.ink < 3:
            problems.append(f"figure {i} has {fig.ink:.1%} of pixels drawn where the first had {ref.ink:.1%}")
    return problems


def text_problems(snap: Snapshot) -> list[str]:
    """Lines of the panel's text that report a failure (a panel may show an exception as one line)."""
    return [f"the panel says {line.strip()!r}" for line in snap.text.splitlines()
            if line.strip().startswith(("error:", "Error", "Traceback"))]


def new_errors(nb: Notebook, seen: set) -> list[str]:
    found = [e for e in nb.errors() if e not in seen]
    seen.update(found)
    return [short(e) for e in found]


def short(text: str, lines: int = 4) -> str:
    rows = text.strip().splitlines()
    return " | ".join(rows[:lines]) + (f" | ... ({len(rows)} lines)" if len(rows) > lines else "")


def save_figures(snap: Snapshot, path: Path):
    """The panel's PNGs as the page has them (a screenshot stops at the viewport's bottom)."""
    import base64
    for i, src in enumerate(snap.imgs):
        if src.startswith("data:image/png;base64,"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_name(f"{path.stem}-figure{i}.png").write_bytes(base64.b64decode(src.split(",", 1)[1]))


def change_problems(nb: Notebook, what: str, before: Snapshot, after: Snapshot, secs: float, first: Snapshot,
                    seen: set, shot_path: Path | None = None) -> list[str]:
    """What is wrong after one change: nothing new shown, a broken figure, an error or traceback."""
    problems = []
    if not after.differs(before):
        problems.append(f"{what}: the panel did not change in {secs:.0f} s")
    broken = figure_problems(after, first)
    if broken and shot_path is not None:
        save_figures(after, shot_path)
        save_figures(first, shot_path.with_name(f"{shot_path.stem}-first.png"))
    problems += [f"{what}: {p}" for p in broken]
    problems += [f"{what}: the panel shows {short(e)}" for e in after.errors]
    problems += [f"{what}: {p}" for p in text_problems(after)]
    problems += [f"{what}: the notebook shows {e}" for e in new_errors(nb, seen)
                 if not any(e == short(a) for a in after.errors)]
    return problems


def greyed_problems(where: dict, expected: frozenset, labels: dict) -> list[str]:
    """The controls the page greys out against those the panel's greyed() names at the page's setting."""
    shown = {name for name, pc in where.items() if pc["disabled"]}
    problems = []
    if shown - expected:
        problems.append("greys out " + ", ".join(f"'{labels[n]}'" for n in sorted(shown - expected))
                        + ", which the panel says apply here")
    if expected - shown:
        problems.append("leaves " + ", ".join(f"'{labels[n]}'" for n in sorted(expected - shown))
                        + " enabled, which the panel says do not apply here")
    return problems


def shoot(panel, path: Path, problems: list, clock: Clock | None = None):
    """A screenshot of the panel where a check failed (each is 0.3-1 s of the browser's time on two
    cores, and checks nothing), or after every change with NETLAB_SCREENSHOTS_ALL=1."""
    if problems or EVERY_SHOT:
        with clock("screenshot") if clock is not None else contextlib.nullcontext():
            panel.screenshot(path)


def covered_by_walk(plan: list, walked: list) -> list:
    """The plan's changes the regime walk has already made the same way, each as (control, how): a key
    press on a slider (the walk moves sliders with arrow keys), a choice in a menu, toggle or checkbox of
    the same kind (the walk picks options the same way). A drag is never covered (the walk does not
    drag). What a change checks does not depend on which control brought it: the page's message, the
    kernel's run on its main thread, the figure's replacement are the same for every control."""
    kinds = {pc["kind"] for pc in walked}
    return [(c, how) for c, how in plan
            if (how == "key" and "slider" in kinds) or (how == "choose" and c["kind"] in kinds)]


def covered_by_interrupt(plan: list) -> list:
    """The plan's changes the change after an Interrupt makes the same way (interrupt_problems presses an
    arrow key on an enabled slider, then checks the panel changed, its figure, its errors and its text,
    and the notebook's errors): its arrow key on a slider."""
    return [(c, how) for c, how in plan if how == "key" and c["kind"] == "slider"]


def walk_ahead(panel, model) -> list[dict]:
    """The page's controls the regime walk would change from the setting the page shows now, one per change."""
    controls = controls_of(model)
    state, where, problems = from_page(controls, panel.controls())
    if problems:
        return []
    return [where[name] for name, _ in walk(model, regimes(model, controls, state), state)]


def regime_problems(nb: Notebook, panel, model, first: Snapshot, shot, seen: set,
                    clock: Clock | None = None) -> tuple[list[str], list[dict]]:
    """Move the panel through its regimes (browser_regimes.walk, from the panel class's own greyed());
    after each change the usual checks, that the control took the value, and that the page greys out
    exactly what greyed() says at the setting the page shows. Returns (problems, the page's controls
    it changed, one per change)."""
    clock = clock or Clock()
    controls = controls_of(model)
    by_name = {c.name: c for c in controls}
    labels = {c.name: c.label for c in controls}
    state, where, problems = from_page(controls, panel.controls())
    if problems:
        return [f"the page against {type(model).__name__}: {p}" for p in problems], []
    problems += [f"before its regimes: {p}" for p in greyed_problems(where, greyed(model, state), labels)]
    plan, changed = walk(model, regimes(model, controls, state), state), []
    for step, (name, value) in enumerate(plan, 1):
        c = by_name[name]
        steps = abs(index_of(c, value) - index_of(c, state[name])) if c.kind == "slider" else 1
        with clock("regime: read + change"):
            before = panel.snapshot()
            what = panel.set_index(where[name], index_of(c, value), at=index_of(c, state[name])) + f" (to {value!r})"
        changed.append(where[name])
        after, secs = panel.wait_change(before, several=steps > 1)          # one message per key, held back
        clock.waited(panel, "regime")
        with clock("checks"):
            found = change_problems(nb, what, before, after, secs, first, seen, shot(f"regime{step}-{name}"))
        with clock("regime: read controls"):
            state, where, mismatch = from_page(controls, panel.controls())
        found += [f"{what}: {p}" for p in mismatch]
        if state.get(name) != value:
            found.append(f"{what}: '{c.label}' shows {state.get(name)!r}")
        found += [f"{what}: {p}" for p in greyed_problems(where, greyed(model, state), labels)]
        shoot(panel, shot(f"regime{step}-{name}"), found, clock)
        problems += found
    return problems, changed


def interrupt_problems(nb: Notebook, panel, first: Snapshot, shot, clock: Clock | None = None) -> list[str]:
    """Start a slow change, press the toolbar's Interrupt, check it lands in one line and the next change works."""
    problems, clock = [], clock or Clock()
    slider = next(c for c in panel.controls() if c["kind"] == "slider" and not c["disabled"])
    before = panel.snapshot()
    panel.change(slider, "key")
    t0 = time.monotonic()                              # wait for a sign that it computes, then a moment more
    while time.monotonic() - t0 < 5 and nb.kernel_status() != "Busy" and "computing" not in panel.root.inner_text():
        time.sleep(0.05)
    # Not a full second: on an idle machine a change whose training diverges early (random-k with error
    # feedback stops at step 20) finishes in about a second, and the Interrupt then found nothing to stop.
    time.sleep(0.3)
    nb.interrupt()
    snap, landed_s = panel.wait_change(before, timeout_s=120)
    clock.waited(panel, "interrupt")
    said = snap.text + "\n".join(snap.errors)
    if "nterrupt" not in said:
        problems.append(f"Interrupt did not stop the panel: {landed_s:.1f} s later it showed "
                        f"{'the finished result' if snap.differs(before) else 'nothing new'} (text: {short(snap.text, 2)!r})")
    for e in snap.errors:
        if len(e.strip().splitlines()) > 2:
            problems.append(f"after Interrupt the panel shows a {len(e.strip().splitlines())}-line traceback: {short(e)}")
    shoot(panel, shot("interrupted"), problems, clock)
    slider = panel.control(slider)
    what = panel.change(slider, "key")
    after, secs = panel.wait_change(snap)
    clock.waited(panel, "after-interrupt")
    found = []
    if not after.differs(snap):
        found.append(f"after Interrupt, {what}: the panel did not change in {secs:.0f} s")
    found += [f"after Interrupt, {what}: {p}" for p in figure_problems(after, first)]
    found += [f"after Interrupt, {what}: the panel shows {short(e)}" for e in after.errors]
    found += [f"after Interrupt, {what}: {p}" for p in text_problems(after)]
    shoot(panel, shot("after-interrupt"), found, clock)
    return problems + found


@pytest.mark.slow
@pytest.mark.timeout(900)                              # a chapter took 4-6 min at load 20-40 on 2 cores
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_panels_work_in_jupyterlab(lab, browser, chapter):
    stem = chapter.split("_")[0]
    # the chapter's copy holding the cells its widgets need (tests/panel_cells.py), beside it in the lab
    copy = chapter.replace(".ipynb", ".widgets.ipynb")
    cells = write_widget_copy(lab.root / chapter, lab.root / copy)
    nb = Notebook(browser.page, lab, copy)
    problems, seen, clock, t_start = [], set(), Clock(), time.monotonic()
    for phase, secs in STARTUP.items():
        clock.add(phase, secs)
    STARTUP.clear()
    try:
        with clock("open (page load)"):
            nb.open()
        with clock("Run All"):
            ran_s = nb.run_all()
        problems += [f"after Run All ({ran_s:.0f} s) of its cells {cells.summary()}: {e}"
                     for e in new_errors(nb, seen)]
        panels = nb.panels()
        source = (ROOT / "labs" / chapter).read_text()
        cls = panel_class(source, stem)
        model = shadow(cls) if cls is not None and len(panels) == 1 else None   # its controls and greyed()
        if "Panel(" in source or "widgets." in source:      # a chapter without panels: its cells run, nothing more
            assert panels, f"{chapter}: no widget panel found after Run All"
        for panel in panels:
            name = f"ch{stem} panel {panel.index}"

            def shot(tag, panel=panel):
                return SHOTS / f"ch{stem}-panel{panel.index}-{tag}.png"
            # in view first, as a person scrolls to it: JupyterLab leaves cells off screen unrendered
            # (content-visibility), and their text, labels included, reads "" until they are shown
            panel.root.scroll_into_view_if_needed()
            first = panel.snapshot()
            found = [f"{name} after Run All: {p}" for p in figure_problems(first, first)]
            if not first.imgs:
                found.append(f"{name} after Run All shows no figure (text: {short(first.text, 2)!r})")
            shoot(panel, shot("0-start"), found, clock)
            problems += found

            def planned(step, control, how, panel=panel, name=name, shot=shot, first=first):
                with clock("plan: read + change"):
                    before = panel.snapshot()
                    what = panel.change(control, how)
                after, secs = panel.wait_change(before)
                clock.waited(panel, "plan")
                with clock("checks"):
                    found = [f"{name}, {p}" for p in change_problems(nb, what, before, after, secs, first, seen,
                                                                     shot(f"{step}-{how}"))]
                shoot(panel, shot(f"{step}-{how}"), found, clock)
                return found
            # The plan's changes from the chapter's own setting, less those the regime walk will make the
            # same way (a key press on a slider, a choice in a control of the same kind); a drag, always.
            plan = list(enumerate(panel.plan(), 1))
            later = covered_by_walk([c for _, c in plan], walk_ahead(panel, model)) if model is not None else []
            # where the panel is interrupted, the change after the Interrupt is an arrow key on a slider with
            # the same checks (interrupt_problems): the plan's arrow key is that change
            interrupts = chapter in INTERRUPT_IN and panel.index == len(panels) - 1
            after_interrupt = covered_by_interrupt([c for _, c in plan if c not in later]) if interrupts else []
            for step, (control, how) in plan:
                if (control, how) not in later and (control, how) not in after_interrupt:
                    problems += planned(step, control, how)
            if model is not None:
                with clock("regime walk (all)"):
                    found, walked = regime_problems(nb, panel, model, first, shot, seen, clock)
                problems += [f"{name}, {p}" for p in found]
                # the walk went another way than foreseen (the plan's own changes moved its start): the
                # changes it did not make for the plan are made now
                for step, (control, how) in plan:
                    if (control, how) in later and (control, how) not in covered_by_walk(later, walked):
                        problems += planned(step, panel.control(control), how)
            if interrupts:
                with clock("interrupt (all)"):
                    problems += [f"{name}: {p}" for p in interrupt_problems(nb, panel, first, shot, clock)]
                problems += [f"{name} after Interrupt: the notebook shows {e}" for e in new_errors(nb, seen)]
    finally:
        with clock("shut down kernels"):
            lab.shut_down_kernels(wait=False)         # they end while the next chapter opens
        report = clock.report(f"ch{stem} in the browser", time.monotonic() - t_start) + \
            f"\n  cells run: {cells.summary()}"
        print("\n" + report)
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"timings-ch{stem}.txt").write_text(report + "\n")
    assert not problems, f"{chapter} in JupyterLab {lab.versions()['jupyterlab']} (screenshots in {SHOTS}):\n" + \
        "\n".join(problems)


# The checks themselves, on figures drawn here (no browser needed): a whole figure passes, a blank,
# half-drawn, cut-off or appended one does not.
def _png_src(draw_axes=(0, 1, 2), blank=False, cut=False, zeros=()) -> str:
    import base64
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox
    fig = Figure(figsize=(9, 3))
    FigureCanvasAgg(fig)
    for i, ax in enumerate(fig.subplots(1, 3)):
        if i in draw_axes:
            ax.bar(range(4), [0, 0, 0, 0] if i in zeros else [3, 1, 4, 1])
            ax.set_ylim(0, 4)
            ax.set_title(f"panel {i}")
        else:
            ax.set_axis_off()
    buf = io.BytesIO()
    if blank:
        fig.clear()
    # cut: a crop (inches) through the titles and tick labels, as when the bbox was measured on another layout
    fig.savefig(buf, format="png", dpi=60, pad_inches=0.1,
                bbox_inches=Bbox([[0.5, 0.5], [8.0, 2.7]]) if cut else "tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_figure_checks_pass_a_whole_figure_and_catch_broken_ones():
    first = Snapshot("text", [_png_src()], [])
    assert figure_problems(Snapshot("new text", [_png_src()], []), first) == []
    assert any("blank" in p for p in figure_problems(Snapshot("t", [_png_src(blank=True)], []), first))
    assert any("half drawn" in p for p in figure_problems(Snapshot("t", [_png_src(draw_axes=(0,))], []), first))
    assert figure_problems(Snapshot("t", [_png_src(zeros=(2,))], []), first) == []     # data of zeros, axes drawn
    assert any("cut off" in p for p in figure_problems(Snapshot("t", [_png_src(cut=True)], []), first))
    assert any("appended" in p for p in figure_problems(Snapshot("t", [_png_src(), _png_src()], []), first))
    assert text_problems(Snapshot("error: TypeError: boom", [], [])) == ["the panel says 'error: TypeError: boom'"]


def test_waiting_for_a_change_ends_on_the_full_answer_even_when_it_lands_between_two_reads():
    """A refining panel shows its first answer, says "on its way" for longer than the settling time,
    then shows the full answer and clears its status. Here the full answer lands just after each read
    of the figure, before anything else is read: the wait must still end on the full answer."""
    from browser_driver import Panel
    from netlab.ui.panel import REFINING

    first = Snapshot("first answer, the first 20 of 60 steps", ["a"], [], REFINING)
    full = Snapshot("the full answer", ["b"], [], "this change took 3.1 s in the kernel")

    class Page(Panel):                         # the page as a browser reads it, one read at a time
        def __init__(self):
            self.t0, self.now = time.monotonic(), first
            self.nb = type("Nb", (), {"kernel_status": staticmethod(lambda: "Idle")})()

        def snapshot(self):
            shown = Snapshot(self.now.text, self.now.imgs, [], self.now.status.replace("<i>", ""))
            if time.monotonic() - self.t0 > 2.0:
                self.now = full                # arrives right after this read
            return shown

        def busy(self):
            return "on its way" in self.now.status.replace("<i>", "")

    after, _ = Page().wait_change(Snapshot("before", ["z"], []), timeout_s=10, settle_s=1.5)
    assert after.text == "the full answer"


def test_waiting_ends_soon_after_the_status_says_done_but_not_on_a_status_left_from_before():
    """The short quiet period needs this change's "took": a new figure under the status line of the change
    before (the same words, never seen busy) or a change sent in several messages waits the full one."""
    from browser_driver import Panel

    class Page(Panel):                         # shows `shown` from the first read on
        def __init__(self, shown):
            self.shown = shown
            self.nb = type("Nb", (), {"kernel_status": staticmethod(lambda: "Idle")})()

        def snapshot(self):
            return self.shown

    took = "this change took 0.50 s in the kernel"
    before = Snapshot("before", ["a"], [], took)
    t0 = time.monotonic()
    after, _ = Page(Snapshot("after", ["b"], [], "this change took 0.31 s in the kernel")).wait_change(before)
    assert after.text == "after" and time.monotonic() - t0 < 1.2
    for page, several in ((Page(Snapshot("after", ["b"], [], took)), False),
                          (Page(Snapshot("after", ["b"], [], "this change took 0.31 s in the kernel")), True)):
        t0 = time.monotonic()
        page.wait_change(before, several=several)
        assert time.monotonic() - t0 >= 1.5


def test_plan_leaves_to_the_walk_and_the_interrupt_the_changes_they_make_the_same_way():
    slider = {"kind": "slider", "label": "ranks"}
    other = {"kind": "slider", "label": "bandwidth"}
    menu = {"kind": "dropdown", "label": "method"}
    toggle = {"kind": "toggle", "label": "mode"}
    plan = [(slider, "key"), (other, "drag"), (menu, "choose")]
    assert covered_by_walk(plan, []) == []
    assert covered_by_walk(plan, [menu, menu]) == [(menu, "choose")]
    assert covered_by_walk(plan, [other, toggle]) == [(slider, "key")]          # a drag is never left to it
    assert covered_by_walk([(toggle, "choose")], [menu]) == []
    assert covered_by_interrupt(plan) == [(slider, "key")]                      # the key press after it


# The regime walk, on the panels' own definitions (no browser needed): it reaches what the issue asks
# for by name (every routing mode and both fabrics in chapter 5, every scenario in chapter 7), sees each
# greyable control greyed and enabled again, and never moves a control while it is greyed.
def _walked(chapter: str, **start):
    model = shadow(panel_class((ROOT / "labs" / chapter).read_text(), chapter.split("_")[0]))
    state = dict({n: c.value for n, c in model.controls.items()}, **start)
    plan = walk(model, regimes(model, controls_of(model), state), state)
    states = [state]
    for name, value in plan:
        assert name not in greyed(model, states[-1]), f"the walk moves '{name}' while it is greyed"
        states.append(dict(states[-1], **{name: value}))
    return model, plan, [greyed(model, s) for s in states]


def _greyed_then_back(offs: list) -> set:
    return {g for g in set().union(*offs) for i, off in enumerate(offs) if g in off and any(g not in o for o in offs[i:])}


def test_regime_walk_covers_chapter_5s_routing_fabrics_and_greyed_controls():
    _, plan, offs = _walked("05_topology.ipynb", placement="shuffled")       # where the notebook starts
    assert {v for n, v in plan if n == "routing"} | {"ecmp"} == {"ecmp", "spray", "adaptive"}
    assert ("fabric", "spine-leaf") in plan and ("fabric", "fat-tree") in plan                # and back
    assert {"k", "ratio", "nics", "seed"} <= _greyed_then_back(offs)
    assert len(plan) <= 10


def test_regime_walk_covers_every_chapter_7_scenario_and_the_one_node_case():
    _, plan, offs = _walked("07_observability.ipynb")
    assert {v for n, v in plan if n == "scenario"} >= {"slow_link", "straggler", "hot_shard", "spine",
                                                       "small_bucket", "pfc_storm", "none"}
    assert ("ranks", 1) in plan
    assert {"bucket", "overlap", "ranks", "bandwidth", "latency", "seed"} <= _greyed_then_back(offs)


def test_regime_walk_greys_chapter_1s_network_for_one_node_and_back():
    _, plan, offs = _walked("01_why_the_network.ipynb", ranks=4)
    assert plan == [("ranks", 1), ("ranks", 4)]
    assert offs == [frozenset(), {"bandwidth", "latency"}, frozenset()]


def test_greyed_check_catches_a_page_that_greys_the_wrong_controls():
    where = {"k": {"disabled": True}, "ratio": {"disabled": False}, "seed": {"disabled": False}}
    labels = {"k": "fat-tree k", "ratio": "spine-leaf ratio :1", "seed": "seed"}
    assert greyed_problems(where, frozenset({"k"}), labels) == []
    assert greyed_problems(where, frozenset({"ratio"}), labels) == [
        "greys out 'fat-tree k', which the panel says apply here",
        "leaves 'spine-leaf ratio :1' enabled, which the panel says do not apply here"]


def test_page_controls_are_matched_to_the_panels_by_label_and_options():
    model = shadow(panel_class((ROOT / "labs" / "05_topology.ipynb").read_text(), "05"))
    controls = controls_of(model)
    page = [{"kind": "toggle", "label": "routing", "disabled": False, "options": ["ecmp", "spray", "adaptive"], "now": 1},
            {"kind": "slider", "label": "fat-tree k", "disabled": False, "now": 2, "min": 0, "max": 3}]
    state, where, problems = from_page(controls, page)
    assert state == {"routing": "spray", "k": 16} and set(where) == {"routing", "k"}
    assert len(problems) == 1 and "does not show the panel's control(s)" in problems[0]
    page[0]["options"] = ["ecmp", "spray"]
    page.append({"kind": "dropdown", "label": "colour", "disabled": False, "options": ["red"], "now": 0})
    problems = from_page(controls, page)[2]
    assert any("offers" in p for p in problems) and any("'colour' the panel does not define" in p for p in problems)


# Which cells the browser runs (tests/panel_cells.py), read from the cells (no browser needed).
def test_widget_cells_are_the_widgets_and_what_they_use_transitively():
    from panel_cells import choose
    cells = ["import os\nfrom netlab.ui.ch1 import StepPanel\nfrom netlab.ui.ch5 import describe\nimport numpy as np",
             "width = 512\nsizes = [1, 2]",                    # 1: width, used by the panel
             "sizes.append(3)\nunused = np.zeros(3)",           # 2: changes sizes in place
             "r = heavy(width)\nprint(describe(r))",            # 3: reads width, defines r: nobody uses r
             "import json\nfrom netlab import sim\nrows = sim.sweep()",        # 4: its imports only
             "%time x = 1",                                     # 5: a magic: whole
             "from somewhere import *",                         # 6: a star import: whole
             "n = len(sizes)",                                  # 7: used by the panel through n
             "panel = StepPanel(width=width, ranks=n)\npanel",   # 8: shows a panel
             "panel.controls['ranks'].value = 2",                # 9: uses panel: a widget cell too
             "exec(code)"]                                      # 10: cannot be read: whole
    choice = choose(cells)
    assert choice.run == ["whole", "whole", "whole", "none", "imports", "whole", "whole", "whole", "whole",
                          "whole", "whole"], list(zip(choice.run, choice.why))


def test_widget_cells_of_chapter_4_leave_out_its_trainings():
    import json

    from panel_cells import widget_copy
    notebook = json.loads((ROOT / "labs" / "04_gradient_compression.ipynb").read_text())
    copy, choice = widget_copy(notebook)
    code = ["".join(c["source"]) for c in copy["cells"] if c["cell_type"] == "code"]
    assert any("CompressPanel(" in c for c in code) and any("questions.ch4(" in c for c in code)
    assert not any("run_training(" in c for c in code)
    assert [c["cell_type"] for c in copy["cells"]].count("markdown") == \
        [c["cell_type"] for c in notebook["cells"]].count("markdown")
