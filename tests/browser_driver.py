"""Drive the chapters in JupyterLab in headless Chromium, the way a student does.

`JupyterLab` starts a server on 127.0.0.1 over a temporary copy of labs/ with JupyterLab's default
settings (user settings, workspaces and config are hidden behind temporary folders), and `Browser`
opens it in the system's Chromium through Playwright (the Python package; it never downloads a
browser). `Notebook` opens a notebook (in the JupyterLab the page shows, or by loading it) and runs
all its cells from the Run menu; `Panel` finds a widget panel (a widget box that holds controls and an
output area), changes its controls with the keyboard, the mouse and the selectors a person uses, and
reads back what the panel shows: its text and the PNG figures it displays, decoded from the page.

The DOM selectors are JupyterLab 4's and ipywidgets 8's (`.jp-OutputArea-output`, `.widget-output`,
`.widget-slider`, `.noUi-handle`, ...); panels are found by their shape, not by a class of their own.
Used by tests/test_browser.py and benchmarks/panel_latency.py.
"""
from __future__ import annotations

import base64
import io
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("NETLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 1000}            # px: the width the chapters are written for
ERROR_MIME = "application/vnd.jupyter.error"
TRACE = os.environ.get("NETLAB_BROWSER_TRACE", "") not in ("", "0")     # print each read of wait_change
STDERR_MIME = "application/vnd.jupyter.stderr"


def unavailable() -> str | None:
    """Why the browser tests cannot run here (one line), or None when they can."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; or set NETLAB_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[dev]')"
    if shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None:
        return f"jupyter-lab is not installed beside {sys.executable} (pip install -e '.[lab]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server over a copy of labs/, isolated from the user's settings; a context manager."""

    def __init__(self, labs: Path = ROOT / "labs", env: dict | None = None, startup_s: float = 120):
        self.labs, self.extra_env, self.startup_s = Path(labs), dict(env or {}), startup_s
        self.port, self.token = free_port(), base64.b32encode(os.urandom(15)).decode().lower()
        self.tmp = self.proc = self.root = None          # root: the copy of labs/ the server shows
        self.closing = []                                 # threads shutting kernels down (shut_down_kernels)

    def __enter__(self) -> "JupyterLab":
        self.tmp = Path(tempfile.mkdtemp(prefix="netlab-lab-"))
        root = self.root = self.tmp / "labs"
        shutil.copytree(self.labs, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.trace.json"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_", "IPYTHON"))}
        env.update(HOME=str(self.tmp / "home"), JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
                   JUPYTER_DATA_DIR=str(self.tmp / "data"), JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"),
                   JUPYTERLAB_SETTINGS_DIR=str(self.tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"), IPYTHONDIR=str(self.tmp / "ipython"),
                   MPLCONFIGDIR=str(self.tmp / "matplotlib"), OMP_NUM_THREADS="1", CI="1")
        for key, value in self.extra_env.items():       # None: leave the variable out (CI=None: full size)
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        (self.tmp / "home").mkdir()
        # Several may start at once (a JupyterLab per pytest-xdist worker): each has its own temporary
        # folders, and a port another process took between free_port() and the server's bind (the server
        # then exits saying so) is retried on a new one.
        for attempt in range(3):
            cmd = [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--ServerApp.ip=127.0.0.1",
                   f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}"]
            if os.geteuid() == 0:
                cmd.append("--allow-root")
            self.log = open(self.tmp / "server.log", "wb")
            self.proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=self.log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            deadline = time.monotonic() + self.startup_s
            while True:
                try:
                    self.api("GET", "status", timeout=2)
                    return self
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
            tail = (self.tmp / "server.log").read_text(errors="replace")[-2000:]
            if self.proc.poll() is not None and ("is not available" in tail or "already in use" in tail) and attempt < 2:
                self.log.close()
                self.port = free_port()
                continue
            self.__exit__()
            raise RuntimeError(f"JupyterLab did not start on port {self.port}:\n{tail}")

    def __exit__(self, *exc):
        for thread in self.closing:
            thread.join(timeout=30)
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)          # the server, its kernels and their ranks
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.tmp is not None:
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def url(self, path: str = "lab") -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}/{path}{sep}token={self.token}"

    def api(self, method: str, path: str, timeout: float = 30):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self, wait: bool = True):
        """End every kernel running now (and with it its rank pool), as File > Shut Down All Kernels does.
        wait=False returns at once and lets the server end them meanwhile: a kernel that does not exit on
        the shutdown request is ended 2.5 s later (jupyter_client: half its shutdown_wait_time), time the
        next chapter can spend opening. Those still ending are waited for when the server stops."""
        ids = [kernel["id"] for kernel in self.api("GET", "kernels")]

        def end():
            for kernel in ids:
                try:
                    self.api("DELETE", f"kernels/{kernel}")
                except OSError:
                    pass                              # gone already
        if wait:
            end()
            return
        import threading
        self.closing = [t for t in self.closing if t.is_alive()]
        self.closing.append(threading.Thread(target=end, daemon=True))
        self.closing[-1].start()

    def versions(self) -> dict:
        from importlib.metadata import version
        return {p: version(p) for p in ("jupyterlab", "ipykernel", "ipywidgets", "matplotlib", "playwright")}


class Browser:
    """Headless system Chromium driven by Playwright; a context manager giving `page`."""

    def __enter__(self) -> "Browser":
        from playwright.sync_api import sync_playwright
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport=VIEWPORT)
        return self

    def __exit__(self, *exc):
        self.browser.close()
        self._pw.stop()


# JavaScript run in the page. Panels: widget views in a cell's output (not nested in another widget's
# output) that hold a `.widget-output` and at least one control. Each gets data-netlab-panel=i.
_FIND_PANELS = """() => {
  const views = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')]
    .filter(v => !v.parentElement.closest('.widget-output'));
  const panels = views.filter(v => v.querySelector('.widget-output') &&
      v.querySelector('.widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-checkbox'));
  panels.forEach((p, i) => p.setAttribute('data-netlab-panel', String(i)));
  return panels.length;
}"""

# One read of a panel also returns the kernel's state (the status bar's text) and how many times the panel
# or the status bar has changed since the page was read first: a MutationObserver, installed on the first
# read, counts them, and _AWAIT_CHANGE waits in the page until that count moves (no reads in between).
_READ_PANEL = """(p) => {
  if (p.__netlabChanges === undefined) {
    p.__netlabChanges = 0;
    p.__netlabWake = [];
    const bump = () => { p.__netlabChanges += 1; p.__netlabWake.splice(0).forEach(f => f()); };
    const seen = new MutationObserver(bump);
    seen.observe(p, {subtree: true, childList: true, attributes: true, characterData: true});
    const bar = document.querySelector('.jp-StatusBar-Widget');
    if (bar) seen.observe(bar, {subtree: true, childList: true, characterData: true});
  }
  const bar = document.querySelector('.jp-StatusBar-Widget');
  const out = p.querySelector('.widget-output');
  const imgs = [...out.querySelectorAll('img')].map(i => i.getAttribute('src') || '');
  const errors = [...out.querySelectorAll('.jp-OutputArea-output')]
    .filter(o => o.getAttribute('data-mime-type') === '""" + ERROR_MIME + """' ||
                 (o.getAttribute('data-mime-type') === '""" + STDERR_MIME + """' && /Traceback|Error/.test(o.textContent)))
    .map(o => o.textContent);
  const status = p.querySelector('.netlab-panel-status');
  return {text: out.innerText, imgs: imgs, errors: errors, status: status ? status.textContent : '',
          kernel: bar ? bar.innerText : '', changes: p.__netlabChanges};
}"""

_AWAIT_CHANGE = """(p, [seen, ms]) => new Promise(resolve => {
  if (p.__netlabChanges !== seen) return resolve(true);
  const timer = setTimeout(() => resolve(false), ms);
  p.__netlabWake.push(() => { clearTimeout(timer); resolve(true); });
})"""

KERNEL_STATES = ("Idle", "Busy", "Starting", "Connecting", "Restarting", "Unknown", "Dead", "Initializing")


# The kernel has shown `state` in the status bar for `steady` ms (kernel_state's reading, in the page).
_KERNEL_STEADY = """([state, steady, states]) => {
  const bar = document.querySelector('.jp-StatusBar-Widget');
  const now = (bar ? bar.innerText : '').replace(/\\n/g, '|').split('|').map(s => s.trim())
    .find(s => states.includes(s)) || 'Unknown';
  if (now !== state) { window.__netlabSince = undefined; return false; }
  if (window.__netlabSince === undefined) window.__netlabSince = performance.now();
  return performance.now() - window.__netlabSince >= steady;
}"""


def kernel_state(status_bar: str) -> str:
    """The kernel's state in the status bar's text ('Idle', 'Busy', ...; 'Unknown' if it shows none)."""
    for part in status_bar.replace("\n", "|").split("|"):
        if part.strip() in KERNEL_STATES:
            return part.strip()
    return "Unknown"


_PAGE_ERRORS = """() => {
  const found = [];
  for (const o of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
    const mime = o.getAttribute('data-mime-type'), text = o.textContent;
    if (mime === '""" + ERROR_MIME + """') found.push(text);
    else if (mime === '""" + STDERR_MIME + """' && /Traceback|Error/.test(text)) found.push(text);
  }
  for (const w of document.querySelectorAll('.jp-Notebook .jupyter-widgets, .jp-Notebook .jp-OutputArea-output')) {
    const t = w.childElementCount === 0 ? w.textContent : '';
    if (/Error displaying widget|Error rendering|model not found/.test(t)) found.push(t);
  }
  for (const w of document.querySelectorAll('.jp-Notebook .widget-error, .jp-Notebook .jupyter-widgets-error'))
    found.push('failed widget: ' + w.textContent);
  return found;
}"""

_CONTROLS = """(p) => {
  const inPanelControls = el => !el.closest('.widget-output');
  const label = el => (el.querySelector(':scope > .widget-label') || {innerText: ''}).innerText.trim();
  const controls = [];
  p.querySelectorAll('.widget-slider').forEach(el => {
    if (!inPanelControls(el)) return;
    const h = el.querySelector('.noUi-handle'), t = el.querySelector('.noUi-target');
    if (!h) return;
    controls.push({kind: 'slider', label: label(el),
                   disabled: el.classList.contains('mod-disabled') || (t && t.hasAttribute('disabled')),
                   now: +h.getAttribute('aria-valuenow'), min: +h.getAttribute('aria-valuemin'),
                   max: +h.getAttribute('aria-valuemax')});
  });
  p.querySelectorAll('.widget-dropdown').forEach(el => {
    if (!inPanelControls(el)) return;
    const s = el.querySelector('select');
    controls.push({kind: 'dropdown', label: label(el), disabled: s.disabled,
                   options: [...s.options].map(o => o.value), now: s.selectedIndex});
  });
  p.querySelectorAll('.widget-toggle-buttons').forEach(el => {
    if (!inPanelControls(el)) return;
    const bs = [...el.querySelectorAll('button')];
    controls.push({kind: 'toggle', label: label(el), disabled: bs.every(b => b.disabled),
                   options: bs.map(b => b.innerText.trim()), now: bs.findIndex(b => b.classList.contains('mod-active'))});
  });
  p.querySelectorAll('.widget-checkbox').forEach(el => {
    if (!inPanelControls(el)) return;
    const c = el.querySelector('input[type=checkbox]');
    controls.push({kind: 'checkbox', label: el.innerText.replace(/\u200b/g, '').trim(), disabled: c.disabled, now: c.checked ? 1 : 0});
  });
  p.querySelectorAll('.widget-text').forEach(el => {
    if (!inPanelControls(el)) return;
    const i = el.querySelector('input');
    if (i) controls.push({kind: 'text', label: label(el), disabled: i.disabled, now: i.value});
  });
  const seen = {};
  controls.forEach(c => { c.n = seen[c.kind] = (c.kind in seen ? seen[c.kind] + 1 : 0); });
  return controls;
}"""


@dataclass
class Figure:
    """One PNG a panel shows, decoded: size and how much of it is drawn."""
    width: int
    height: int
    ink: float                       # fraction of pixels that are not near-white
    dark: float                      # fraction of pixels dark enough to be text or lines
    grid_ink: list                   # ink in each cell of a 2 x 3 grid (rows top, bottom; columns left to
                                     # right): a half-drawn figure lacks a part the first figure had
    edge_ink: float                  # ink in the 2-px frame: a tight bbox leaves it white, unless the
                                     # figure was drawn with another layout than it was measured with
    grid_dark: list | None = None    # dark pixels in the same grid: axes, ticks and titles are drawn
                                     # whatever the data (an empty bar chart keeps them; a half-drawn
                                     # figure does not)

    @classmethod
    def from_src(cls, src: str) -> "Figure | None":
        if not src.startswith("data:image/png;base64,"):
            return None
        import numpy as np
        from PIL import Image
        img = np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("L"), dtype=float)
        h, w = img.shape
        ink = img < 235
        frame = np.concatenate([ink[:2].ravel(), ink[-2:].ravel(), ink[:, :2].ravel(), ink[:, -2:].ravel()])
        grid = [[float(ink[r * h // 2:(r + 1) * h // 2, c * w // 3:(c + 1) * w // 3].mean()) for c in range(3)]
                for r in range(2)]
        dark = img < 100
        grid_dark = [[float(dark[r * h // 2:(r + 1) * h // 2, c * w // 3:(c + 1) * w // 3].mean()) for c in range(3)]
                     for r in range(2)]
        return cls(w, h, float(ink.mean()), float(dark.mean()), grid, float(frame.mean()), grid_dark)


@dataclass
class Snapshot:
    """What a panel shows: its output's text, its images' sources (data: URLs), its error outputs and its
    status line, read in one pass over the page so that they belong to the same moment."""
    text: str
    imgs: list
    errors: list
    status: str = ""
    kernel: str | None = None        # the status bar's text, read with the rest (None: not read)
    changes: int | None = None       # the page's count of changes to the panel and the status bar

    @property
    def done(self) -> bool:
        """The status line says the last change has finished ("this change took ... s in the kernel"):
        the panel sets it after its last figure, and never while another change is queued."""
        return "this change took" in self.status

    @property
    def busy(self) -> bool:
        """The status line says a change is computing, refining its first answer or waiting for the
        kernel (netlab.ui.panel's words)."""
        return bool(re.search(r"computing|on its way|waiting for", self.status))

    @property
    def figures(self) -> list:
        return [Figure.from_src(src) for src in self.imgs]

    def differs(self, other: "Snapshot") -> bool:
        return self.text != other.text or self.imgs != other.imgs


class Notebook:
    """One chapter open in JupyterLab."""

    def __init__(self, page, lab: JupyterLab, name: str):
        self.page, self.lab, self.name = page, lab, name

    def open(self, timeout_s: float = 120):
        """Open the notebook: in the JupyterLab this page shows already, as a person opens another one
        (the open notebook saved and closed, File > Open from Path...; about 1 s of the browser's CPU),
        else by loading JupyterLab on it (`?reset`: the default layout; 4-5 s of CPU, most of it
        JupyterLab's start in the page). Either way the kernel is then awaited idle."""
        if not (self._in_lab() and self._open_in_app(timeout_s)):
            self.page.goto(self.lab.url(f"lab/tree/{self.name}?reset"), timeout=timeout_s * 1000)
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=timeout_s * 1000)
        self.wait_kernel("Idle", timeout_s)
        news = self.page.locator(".Toastify__toast button", has_text=re.compile(r"^\s*No\s*$"))  # Jupyter news?
        if news.count():
            news.first.click()

    def _in_lab(self) -> bool:
        return self.page.url.startswith(f"http://127.0.0.1:{self.lab.port}/lab") and \
            self.page.locator(".jp-LabShell").count() > 0 and self.page.locator(".jp-Dialog").count() == 0

    def _open_in_app(self, timeout_s: float) -> bool:
        """Save and close what is open, then File > Open from Path...; False (and the page as it is)
        where a step of it does not come about, for the caller to load the page instead."""
        from playwright.sync_api import Error as PlaywrightError
        ms = min(timeout_s, 30) * 1000
        try:
            if self.page.locator(".jp-NotebookPanel").count():
                self.menu("File", "Save Notebook")           # closing a changed notebook asks first
                self.page.locator(".lm-TabBar-tab.jp-mod-dirty").first.wait_for(state="detached", timeout=ms)
            self.menu("File", "Close All Tabs")
            self.page.locator(".jp-NotebookPanel").first.wait_for(state="detached", timeout=ms)
            self.menu("File", "Open from Path")
            self.page.locator(".jp-Dialog input").fill(self.name, timeout=ms)
            self.page.keyboard.press("Enter")
            self.page.locator(".jp-NotebookPanel").first.wait_for(timeout=ms)
            return True
        except PlaywrightError:                               # (its TimeoutError too)
            return False

    def menu(self, menu: str, item: str):
        """Click a menu bar entry, then one of its items, as a person does."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
        self.page.locator(".lm-Menu-itemLabel", has_text=item).first.click()

    def kernel_status(self) -> str:
        """The kernel's state as the status bar shows it ('Idle', 'Busy', 'Starting', ...)."""
        return kernel_state(self.page.locator(".jp-StatusBar-Widget").first.inner_text())

    def wait_kernel(self, state: str = "Idle", timeout_s: float = 300, steady_s: float = 1.0) -> float:
        """Wait until the kernel has been `state` for `steady_s` seconds; return the seconds waited. The
        status bar is read in the page every 0.1 s (a read from here is a round trip through Playwright's
        driver: several processes' CPU for each)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        t0 = time.monotonic()
        self.page.evaluate("() => { window.__netlabSince = undefined; }")
        try:
            self.page.wait_for_function(_KERNEL_STEADY, arg=[state, steady_s * 1000, list(KERNEL_STATES)],
                                        polling=100, timeout=timeout_s * 1000)
        except PlaywrightTimeout:
            raise TimeoutError(f"{self.name}: kernel not {state} after {timeout_s:.0f} s") from None
        return time.monotonic() - t0

    def run_all(self, timeout_s: float = 300) -> float:
        """Run > Run All Cells; wait until no cell is queued or running and the kernel is idle."""
        t0 = time.monotonic()
        self.menu("Run", "Run All Cells")
        while time.monotonic() - t0 < timeout_s:
            # textContent, not innerText: JupyterLab renders cells off screen with content-visibility,
            # and their innerText reads "" (neither queued nor unrun), so a cell running off screen
            # looked done
            prompts = self.page.eval_on_selector_all(
                ".jp-Notebook .jp-CodeCell .jp-InputPrompt", "els => els.map(e => e.textContent.trim())")
            if prompts and not any("*" in p for p in prompts) and all(p != "[ ]:" for p in prompts):
                break
            if prompts and not any("*" in p for p in prompts) and self.errors():
                break                               # a cell failed: Run All leaves the cells after it unrun
            time.sleep(0.5)
        else:
            raise TimeoutError(f"{self.name}: Run All did not finish in {timeout_s:.0f} s")
        # every cell has its number, and with it its outputs (a panel's first figure is drawn in its cell):
        # a second of Idle is for messages still on their way
        self.wait_kernel("Idle", max(30.0, timeout_s - (time.monotonic() - t0)), steady_s=1.0)
        return time.monotonic() - t0

    def errors(self) -> list[str]:
        return self.page.evaluate(_PAGE_ERRORS)

    def panels(self) -> list["Panel"]:
        n = self.page.evaluate(_FIND_PANELS)
        return [Panel(self, i) for i in range(n)]

    def interrupt(self):
        """The toolbar's Interrupt button (a square), what a student reaches for."""
        self.page.locator('.jp-NotebookPanel-toolbar [data-command="notebook:interrupt-kernel"]').first.click()


class Panel:
    """A widget panel: controls above an output area."""

    root = None                      # the panel in the page (None: a stand-in without a page, as in tests)

    def __init__(self, notebook: Notebook, index: int):
        self.nb, self.index = notebook, index
        self.root = notebook.page.locator(f'[data-netlab-panel="{index}"]')

    def snapshot(self) -> Snapshot:
        return Snapshot(**self.root.evaluate(_READ_PANEL))

    def controls(self) -> list[dict]:
        return self.root.evaluate(_CONTROLS)

    def _element(self, control: dict):
        kinds = {"slider": ".widget-slider", "dropdown": ".widget-dropdown", "toggle": ".widget-toggle-buttons",
                 "checkbox": ".widget-checkbox"}
        return self.root.locator(kinds[control["kind"]]).nth(control["n"])

    def control(self, control: dict) -> dict:
        """The same control read again (its value now)."""
        return next(c for c in self.controls() if c["kind"] == control["kind"] and c["n"] == control["n"])

    def change(self, control: dict, how: str) -> str:
        """Change one control as a person does; return a description of what was done."""
        el, page = self._element(control), self.nb.page
        el.scroll_into_view_if_needed()
        if how == "key":
            key = "ArrowRight" if control["now"] < control["max"] else "ArrowLeft"
            el.locator(".noUi-handle").focus()
            page.keyboard.press(key)
            return f"{key} on slider '{control['label']}'"
        if how == "drag":
            handle = el.locator(".noUi-handle").bounding_box()
            track = el.locator(".noUi-target").bounding_box()
            span = control["max"] - control["min"]
            notch = track["width"] / max(1.0, span)                     # px per unit of the slider's value
            sign = -1 if control["now"] > (control["min"] + control["max"]) / 2 else 1
            x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
            page.mouse.move(x, y)
            page.mouse.down()
            for f in (0.3, 0.7, 1.0):                                   # a hand moves in several events
                page.mouse.move(x + sign * notch * f, y)
            page.mouse.up()
            return f"drag of slider '{control['label']}' {'left' if sign < 0 else 'right'} by {notch:.0f} px"
        if how == "choose":
            if control["kind"] == "dropdown":
                i = (control["now"] + 1) % len(control["options"])
                el.locator("select").select_option(index=i)
                return f"chose option {i} in dropdown '{control['label']}'"
            if control["kind"] == "toggle":
                i = (control["now"] + 1) % len(control["options"])
                el.locator("button").nth(i).click()
                return f"clicked '{control['options'][i]}' in '{control['label']}'"
            el.locator("input[type=checkbox]").click()
            return f"clicked checkbox '{control['label']}'"
        raise ValueError(f"how: must be 'key', 'drag' or 'choose', got {how!r}")

    def set_index(self, control: dict, index: int, at: int | None = None) -> str:
        """Move a control to its `index`-th position as a person does: arrow keys on a slider, one per
        step from position `at` (default: the slider's `now`, its position for a selection slider); the
        option in a menu; the button of a toggle; a click on a checkbox to make it `index` (0 or 1)."""
        el, page = self._element(control), self.nb.page
        el.scroll_into_view_if_needed()
        if control["kind"] == "slider":
            steps = round(index - (control["now"] if at is None else at))
            key = "ArrowRight" if steps > 0 else "ArrowLeft"
            el.locator(".noUi-handle").focus()
            for _ in range(abs(steps)):
                page.keyboard.press(key)
            return f"{abs(steps)} x {key} on slider '{control['label']}'"
        if control["kind"] == "dropdown":
            el.locator("select").select_option(index=index)
            return f"chose '{control['options'][index]}' in dropdown '{control['label']}'"
        if control["kind"] == "toggle":
            el.locator("button").nth(index).click()
            return f"clicked '{control['options'][index]}' in '{control['label']}'"
        if control["kind"] == "checkbox":
            if bool(index) != bool(control["now"]):
                el.locator("input[type=checkbox]").click()
            return f"{'ticked' if index else 'cleared'} checkbox '{control['label']}'"
        raise ValueError(f"control: a {control['kind']} cannot be moved to a position")

    def busy(self) -> bool:
        """The panel's status line says a change is still under way. The kernel's own status is no
        guide: a change runs on the main thread after the widget message that brought it has been
        answered, so the kernel reads "Idle" while the panel still computes."""
        return self.snapshot().busy

    def await_change(self, seen: Snapshot, seconds: float) -> None:
        """Wait up to `seconds`, returning as soon as the panel or the kernel's status has changed since the
        read `seen` (a MutationObserver in the page: nothing is read meanwhile, so the wait takes no CPU
        from the kernel). A stand-in without a page sleeps."""
        if self.root is None or seen.changes is None:
            time.sleep(seconds)
            return
        self.root.evaluate(_AWAIT_CHANGE, [seen.changes, int(seconds * 1000)])

    def wait_change(self, before: Snapshot, timeout_s: float = 120, settle_s: float = 1.5,
                    done_settle_s: float = 0.3, several: bool = False) -> tuple[Snapshot, float]:
        """Wait until the panel shows something new, then until it has shown the same thing for a quiet
        period with its status line done and the kernel idle all along (a figure may arrive after the
        text, a full answer after the first); return (snapshot, seconds waited).

        The quiet period is `done_settle_s` once the status line says this change has finished (the
        panel writes "this change took ..." after its last figure, and a queued change reads "waiting
        for", so nothing of this change is left to come); `settle_s` while it says nothing that tells
        (a status line left from the change before, a panel without one). A change the page sends in
        more than one message needs `settle_s` too: a slider moved several steps by keys sends its first
        value, and ipywidgets holds the rest until the kernel has answered that one, so a second run can
        begin a round trip after the first one's "took" (`several=True`).

        The quiet period counts only snapshots taken after the status was read as done, in the same read
        as the figure: a status checked after a separate read of the figure can be the full answer's
        while the figure read is still the first answer's. Between reads the wait sleeps in the page
        until something there changes (`await_change`)."""
        t0 = time.monotonic()
        last, since = before, time.monotonic()
        reads, new_at, busy_seen = 0, None, False
        while time.monotonic() - t0 < timeout_s:
            now = self.snapshot()
            idle = (kernel_state(now.kernel) if now.kernel is not None else self.nb.kernel_status()) == "Idle"
            reads += 1
            if TRACE:
                print(f"  {time.monotonic() - t0:6.2f} s  kernel {kernel_state(now.kernel or '')}  new {now.differs(before)!s:5}"
                      f"  changed {now.differs(last)!s:5}  status {now.status[:50]!r}", flush=True)
            busy_seen = busy_seen or now.busy
            # done for this change: the status moved on from the one before the change (or went through
            # busy), so a "took" left from the previous change does not count
            finished = now.done and idle and (busy_seen or now.status != before.status)
            quiet = done_settle_s if finished and not several else settle_s
            if now.differs(last) or now.busy or not idle:
                last, since = (now if now.differs(last) else last), time.monotonic()
                if new_at is None and now.differs(before):
                    new_at = since - t0
            elif last.differs(before) and time.monotonic() - since >= quiet:
                self.last_wait = {"s": time.monotonic() - t0, "new_s": new_at, "done_s": since - t0, "reads": reads}
                return now, time.monotonic() - t0
            left = timeout_s - (time.monotonic() - t0)
            self.await_change(now, max(0.05, min(1.0, left, since + quiet - time.monotonic()
                                                 if last.differs(before) else 1.0)))
        self.last_wait = {"s": time.monotonic() - t0, "new_s": new_at, "done_s": None, "reads": reads}
        return self.snapshot(), time.monotonic() - t0

    def plan(self, most: int = 3) -> list[tuple[dict, str]]:
        """Up to `most` changes: the keyboard on one slider, a drag of another, a choice in a menu or toggle."""
        enabled = [c for c in self.controls() if not c["disabled"]]
        sliders = [c for c in enabled if c["kind"] == "slider" and c["max"] > c["min"]]
        choices = [c for c in enabled if c["kind"] in ("dropdown", "toggle", "checkbox")]
        steps = []
        if sliders:
            steps.append((sliders[0], "key"))
        if len(sliders) > 1:
            steps.append((sliders[1], "drag"))
        elif sliders:
            steps.append((sliders[0], "drag"))
        if choices:
            steps.append((choices[0], "choose"))
        return steps[:most]

    def screenshot(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.root.screenshot(path=str(path))
