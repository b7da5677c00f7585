"""Slider-to-new-figure latency of every chapter's panels, measured in a real browser.

Starts JupyterLab (default settings) over a copy of labs/, opens each chapter in headless Chromium,
runs all cells, then on each panel presses an arrow key on its first slider N times (right, then
back left, ...) and times each from the key press to the moment the panel shows a new figure (the
PNG in the page changes; for a setting the panel refuses, its text). Prints median and max per panel,
the median of what the panel says the change cost in the kernel (the rest is messages and the browser),
and median and max until the full answer (the status line's "this change took ..."): the same as the
first figure except where a panel shows a first answer and then refines it (chapters 3 and 4).
The kernel runs with CI=1 (the chapters' CI sizes) unless --full is given.

    .venv/bin/python benchmarks/panel_latency.py                 # every chapter, 5 changes per panel
    .venv/bin/python benchmarks/panel_latency.py -n 10 labs/01_why_the_network.ipynb
    .venv/bin/python benchmarks/panel_latency.py labs/07_observability.ipynb   # chapter 7's panel

Needs /usr/bin/chromium (Debian's package) and the playwright Python package (the dev extra).
The times include the browser and the machine's load: run it on an idle machine to compare with
what a chapter's text promises.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from browser_driver import ROOT, Browser, JupyterLab, Notebook, unavailable  # noqa: E402


# In the page: remember what the panel's output shows, and arm a promise that resolves when it changes
# (a new figure, or a new refusal text for a setting the panel cannot run). A MutationObserver runs
# only when the page changes, so the benchmark takes no CPU from the kernel while it waits (polling
# every animation frame did, on two cores).
_ARM = """p => { const out = p.querySelector('.widget-output');
  const shown = () => [...out.querySelectorAll('img')].map(i => i.getAttribute('src') || '').join('|');
  const before = shown(), text = out.innerText;
  document.addEventListener('keydown', () => { p.__pressed = performance.now(); }, {once: true, capture: true});
  p.__changed = new Promise(resolve => {
    const seen = new MutationObserver(() => {
      if (shown() !== before || (out.innerText.includes('cannot run') && out.innerText !== text)) {
        seen.disconnect(); resolve(performance.now()); } });
    seen.observe(out, {subtree: true, childList: true, attributes: true, characterData: true}); });
  const status = p.querySelector('.netlab-panel-status');
  p.__done = new Promise(resolve => {
    let busy = false;
    const watch = new MutationObserver(() => {
      const t = status.innerText;
      if (!t.includes('this change took')) { busy = true; return; }
      if (busy) { watch.disconnect(); resolve(performance.now()); } });
    watch.observe(status, {subtree: true, childList: true, characterData: true}); }); }"""
_WAIT_DONE = """(p, ms) => Promise.race([p.__done.then(t => t - p.__pressed),
                                    new Promise(r => setTimeout(() => r(null), ms))])"""
_WAIT = """(p, ms) => Promise.race([p.__changed.then(t => t - p.__pressed),
                               new Promise(r => setTimeout(() => r(null), ms))])"""
KERNEL_S = re.compile(r"this change took (?:first answer after [0-9.]+ s, )?([0-9.]+) s in the kernel")


def kernel_seconds(panel) -> float | None:
    """What the panel's status line says the last change cost in the kernel (run + figure)."""
    found = KERNEL_S.search(panel.root.locator(".netlab-panel-status").first.inner_text())
    return float(found.group(1)) if found else None


def panel_latencies(nb: Notebook, panel, changes: int, timeout_s: float = 120):
    """Seconds from each key press to a new figure (or new text) on the panel's first enabled slider,
    to the full answer (the status line's "this change took": later than the first figure where the
    panel shows a first answer and refines it), and the kernel's share of each (from that line)."""
    slider = next((c for c in panel.controls() if c["kind"] == "slider" and not c["disabled"]), None)
    if slider is None:
        return "(no slider)", [], [], []
    kernel, times, full, direction = [], [], [], ("ArrowRight" if slider["now"] < slider["max"] else "ArrowLeft")
    for i in range(changes):
        root = panel.root.element_handle()
        root.evaluate(_ARM)
        handle = panel._element(slider).locator(".noUi-handle")
        handle.focus()
        nb.page.keyboard.press(direction)
        ms = root.evaluate(_WAIT, timeout_s * 1000)         # key down to new figure, on the page's own clock
        if ms is None:
            raise TimeoutError(f"{nb.name}: no new figure {timeout_s:.0f} s after {direction} on '{slider['label']}'")
        times.append(ms / 1000)
        done = root.evaluate(_WAIT_DONE, timeout_s * 1000)
        full.append((done if done is not None else ms) / 1000)
        nb.wait_kernel("Idle", timeout_s, steady_s=0.3)
        seconds = kernel_seconds(panel)
        if seconds is not None:
            kernel.append(seconds)
        direction = "ArrowLeft" if direction == "ArrowRight" else "ArrowRight"   # stay near the start
        slider = panel.control(slider)
    return slider["label"], times, full, kernel


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("chapters", nargs="*", help="notebooks (default: every chapter in labs/)")
    ap.add_argument("-n", "--changes", type=int, default=5, help="slider changes per panel (default 5)")
    ap.add_argument("--full", action="store_true", help="the chapters' full sizes (no CI=1 in the kernel)")
    args = ap.parse_args(argv)
    if args.changes < 1:
        ap.error("--changes: must be at least 1")
    reason = unavailable()
    if reason:
        sys.exit(f"cannot measure in a browser: {reason}")
    chapters = [Path(c).name for c in args.chapters] or sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb"))
    env = {"CI": None} if args.full else {}          # the chapters test "CI" in os.environ: leave it out
    with JupyterLab(env=env) as lab, Browser() as b:
        v = lab.versions()
        print(f"# slider-to-new-figure latency in headless Chromium; JupyterLab {v['jupyterlab']}, ipykernel "
              f"{v['ipykernel']}, ipywidgets {v['ipywidgets']}; {args.changes} arrow-key changes per panel; "
              f"CI={'0' if args.full else '1'}")
        print(f"# load average {os.getloadavg()[0]:.1f} at the start (2 cores: above 2, the times stretch)")
        print(f"# {'chapter':32s} {'panel':>5s}  {'slider':22s} {'median':>8s} {'max':>8s} {'kernel':>8s}"
              f" {'full med':>9s} {'full max':>9s}")
        for chapter in chapters:
            nb = Notebook(b.page, lab, chapter)
            try:
                nb.open()
                nb.run_all(timeout_s=1200 if args.full else 300)     # full size: chapter 1 trains 16 ranks
                for error in nb.errors():
                    print(f"# {chapter}: Run All stopped at an error: {' | '.join(error.strip().splitlines()[-2:])}")
                for panel in nb.panels():
                    label, times, full, kernel = panel_latencies(nb, panel, args.changes)
                    if times:
                        inside = f"{statistics.median(kernel):7.2f}s" if kernel else f"{'-':>8s}"
                        print(f"  {chapter:32s} {panel.index:5d}  {label:22s} {statistics.median(times):7.2f}s "
                              f"{max(times):7.2f}s {inside} {statistics.median(full):8.2f}s {max(full):8.2f}s",
                              flush=True)
            finally:
                lab.shut_down_kernels()
        print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
