"""The website (`make site`) in a real browser: every page visited in headless Chromium.

The site is built by tools/build_site.py into _build/site-test/ from this run's executed chapters
(`build_site.py --executed`): the ones the notebook tests executed in this run (recorded by
tests/chapter_runs.py, at the run's sizes: CI sizes under CI, as make test runs), or, when the notebooks
were not run (this file alone), each chapter executed here by build_site.execute first, at the sizes
the environment gives. Or the site is taken as built from $NETLAB_SITE (for example
`NETLAB_SITE=_build/site` after `make site`). A local HTTP server on 127.0.0.1 serves it;
the browser crawls every page reachable from the contents page and fails on:
- a broken link: an internal link to a page that is not there, or to an anchor the page lacks;
- a missing image: an <img> that did not load (or loaded empty), or a figure shown as its text
  ("<Figure size 800x240 with 1 Axes>": the kernel had no image formatter for it);
- a raw traceback or an error output on a page;
- a widget model error, or a widget left for the browser to render (the pages have no widget manager);
- a console error, an uncaught page error, a failed request, or any request to another host (the site
  must work offline: MathJax and the theme are served from the site itself).
Beside that: the contents page lists every chapter in labs/ with its objectives and a Binder link to
that notebook; every panel of a chapter is shown with its last figure and the note that it needs a
kernel; the Chinese terms are drawn with real glyphs (not the missing-glyph box). And make site's own
execution (build_site.execute) still runs a chapter as the notebook tests do, widgets included.

Skips with one line of reason where Chromium, Playwright or Jupyter Book is missing.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from browser_driver import CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT

# Slow: the first test builds the site (rendering this run's executed chapters; executing them too when the
# notebooks were not run here: 6-7 min on 2 loaded cores at CI size); the timeout covers that fixture too.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

CHAPTERS = sorted((ROOT / "labs").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "labs").glob("appendix_*.ipynb"))


def unavailable() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; or set NETLAB_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[dev]')"
    if not os.environ.get("NETLAB_SITE") and not (Path(sys.executable).parent / "jupyter-book").exists():
        return f"jupyter-book is not installed beside {sys.executable} (pip install -e '.[site]', or make test)"
    return None


@pytest.fixture(scope="module")
def site(executed_chapter) -> Path:
    reason = unavailable()
    if reason:
        pytest.skip(f"no site test: {reason}")
    given = os.environ.get("NETLAB_SITE")
    if given:
        path = Path(given).resolve()
        assert (path / "index.html").exists(), f"NETLAB_SITE={given}: no index.html there"
        return path
    out, executed = ROOT / "_build" / "site-test", ROOT / "_build" / "site-test-exec"
    shutil.rmtree(executed, ignore_errors=True)
    executed.mkdir(parents=True)
    for path in CHAPTERS:                         # this run's, copied: build_site checks each one's key again
        shutil.copy(executed_chapter(path), executed / path.name)
    env = dict(os.environ, OMP_NUM_THREADS="1")   # the sizes (CI) the chapters were executed at
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build_site.py"), "--executed", str(executed),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, f"the site did not build:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


# What the page reports about itself, once loaded: ids, links, images, errors shown as text.
_INSPECT = r"""() => {
  const main = document.querySelector('main') || document.body;
  const text = main.innerText;
  const imgs = [...document.querySelectorAll('img')].map(i => ({src: i.currentSrc || i.src,
      ok: i.complete && i.naturalWidth > 0, alt: i.alt}));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const errorOutputs = [...document.querySelectorAll('.cell_output .traceback, .cell_output .error, ' +
      '.output.traceback, .output.error')].map(e => e.innerText.slice(0, 300));
  const widgetViews = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"], ' +
      '.jupyter-widgets, .widget-error, .jupyter-widgets-error').length;
  return {text, imgs, links, ids, errorOutputs, widgetViews, title: document.title};
}"""

WIDGET_ERRORS = re.compile(r"Error displaying widget|Error rendering|model not found|Failed to load model class")


@pytest.fixture(scope="module")
def crawl(server):
    """Visit every page reachable from index.html; {page path: what it showed and what went wrong}."""
    from playwright.sync_api import sync_playwright
    pages, queue, problems = {}, ["index.html"], {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        current: list[str] = []

        def note(msg):
            problems.setdefault(current[0], []).append(msg)

        def route(r):
            if urlparse(r.request.url).hostname == "127.0.0.1":
                r.continue_()
            else:
                note(f"loads {r.request.url} from another host (the site must work offline)")
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and note(f"console error: {m.text}"))
        page.on("pageerror", lambda e: note(f"page error: {e}"))
        # net::ERR_ABORTED is a load the browser cancelled when the crawl moved on (a favicon, say); a
        # missing file shows as its HTTP status below.
        page.on("requestfailed", lambda r: urlparse(r.url).hostname == "127.0.0.1" and "ERR_ABORTED" not in (r.failure or "")
                and note(f"request failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and note(f"HTTP {r.status} for {r.url}"))
        while queue:
            path = queue.pop(0)
            if path in pages:
                continue
            current[:] = [path]
            page.goto(server + path, wait_until="load")
            page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise")
            page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            info = page.evaluate(_INSPECT)
            pages[path] = info
            for link in info["links"]:
                url, _ = urldefrag(link)
                if url.startswith(server):
                    rel = unquote(url[len(server):]) or "index.html"
                    if rel.endswith(".html") and rel not in pages and rel not in queue:
                        queue.append(rel)
        browser.close()
    return pages, problems


def test_every_page_loads_without_errors(crawl):
    pages, problems = crawl
    chapter_pages = {f"labs/{p.stem}.html" for p in CHAPTERS}
    assert chapter_pages <= set(pages), f"pages not reachable from the contents page: {sorted(chapter_pages - set(pages))}"
    found = []
    for path, info in pages.items():
        found += [f"{path}: {p}" for p in problems.get(path, [])]
        found += [f"{path}: image did not load: {i['src'][:120]}" for i in info["imgs"] if not i["ok"]]
        found += [f"{path}: shows an error output: {e!r}" for e in info["errorOutputs"]]
        if "Traceback (most recent call last)" in info["text"]:
            line = next(ln for ln in info["text"].splitlines() if "Traceback" in ln)
            found.append(f"{path}: shows a raw traceback ({line.strip()[:100]!r})")
        for m in re.finditer(r"<Figure size \d+x\d+ with \d+ Axes>", info["text"]):
            found.append(f"{path}: a figure shown as its text {m.group(0)!r}, not drawn")
        for m in WIDGET_ERRORS.finditer(info["text"]):
            found.append(f"{path}: widget error {m.group(0)!r}")
        if info["widgetViews"]:
            found.append(f"{path}: {info['widgetViews']} widget view(s) left for a widget manager the page lacks")
    assert not found, "\n".join(found)


def test_no_broken_links(server, crawl):
    pages, _ = crawl
    ids = {path: set(info["ids"]) for path, info in pages.items()}
    broken = []
    for path, info in pages.items():
        for link in info["links"]:
            url, frag = urldefrag(link)
            if not url.startswith(server):
                if not re.match(r"(https?://[^/\s]+\.[^/\s]+|mailto:)", link):
                    broken.append(f"{path}: malformed external link {link!r}")
                continue
            rel = unquote(url[len(server):]) or "index.html"
            if rel.endswith("/"):
                rel += "index.html"
            if rel not in pages:
                if not rel.endswith(".html"):             # a download (a notebook, a source file)
                    try:
                        with urllib.request.urlopen(url, timeout=30) as r:
                            ok = r.status == 200
                    except OSError:
                        ok = False
                    if not ok:
                        broken.append(f"{path}: link to {rel}, which is not there")
                else:
                    broken.append(f"{path}: link to {rel}, a page that is not there")
                continue
            if frag and frag not in ids[rel]:
                broken.append(f"{path}: link to {rel}#{frag}, an anchor that page lacks")
    assert not broken, "\n".join(sorted(set(broken)))


def objectives(nb: dict) -> list[str]:
    """The numbered items under 'What you will learn' in a chapter's first cell, as written there."""
    first = "".join(next(c for c in nb["cells"] if c["cell_type"] == "markdown")["source"])
    if "**What you will learn**" not in first:
        return []
    after = first.split("**What you will learn**", 1)[1].lstrip("\n")
    return re.findall(r"^\d+\.\s+(.*)$", after.split("\n\n")[0], re.M)


def plain(markdown: str) -> str:
    """Markdown's words as a browser shows them: no emphasis marks or backticks, single spaces."""
    return " ".join(re.sub(r"[*_`]", "", markdown).replace("’", "'").split())


def test_contents_page_lists_every_chapter_with_objectives_and_binder(crawl):
    pages, _ = crawl
    index = pages["index.html"]
    text = " ".join(index["text"].replace("’", "'").split())
    for path in CHAPTERS:
        nb = json.loads(path.read_text())
        title = next(ln[2:] for ln in "".join(nb["cells"][0]["source"]).splitlines() if ln.startswith("# "))
        assert plain(title) in text, f"the contents page does not name {path.name} ({title!r})"
        for item in objectives(nb):
            words = plain(item)[:60]
            assert words in text, f"the contents page lacks {path.name}'s objective {words!r}"
        binder = [u for u in index["links"] if "mybinder.org" in u and u.endswith(f"labs/{path.name}")]
        assert binder, f"the contents page has no Binder link that opens labs/{path.name}"
        page = pages[f"labs/{path.stem}.html"]
        assert any("mybinder.org" in u and u.endswith(f"labs/{path.name}") for u in page["links"]), \
            f"the page of {path.name} has no Binder link to itself"
    for doc in sorted(p.stem for p in (ROOT / "docs").glob("*.md")):      # every docs page, so a new one is not left out
        assert f"docs/{doc}.html" in pages, f"docs/{doc}.md is not a page of the site (tools/build_site.py's DOCS)"


def test_panels_show_their_last_figure_and_say_they_need_a_kernel(server, crawl):
    """Every chapter that builds a panel shows, for each panel, a figure and the note that the live panel needs a kernel."""
    from playwright.sync_api import sync_playwright
    pages, _ = crawl
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        for path in CHAPTERS:
            source = path.read_text()
            if "Panel(" not in source:
                continue
            page.goto(server + f"labs/{path.stem}.html", wait_until="load")
            cells = page.evaluate("""() => [...document.querySelectorAll('.cell')].filter(c =>
                  c.querySelector('.netlab-live-note') && /needs a running kernel/.test(c.innerText))
                .map(c => ({imgs: [...c.querySelectorAll('.cell_output img')].filter(i => i.naturalWidth > 100).length,
                            notes: c.querySelectorAll('.netlab-live-note').length}))""")
            if not cells:
                problems.append(f"{path.name}: no panel shown with its note")
            problems += [f"{path.name}: a panel shown without its figure" for c in cells if c["imgs"] < 1]
        browser.close()
    assert not problems, "\n".join(problems)


def test_chinese_terms_are_drawn_with_glyphs(server, crawl):
    """Two different Chinese characters in the page's own font draw two different shapes; a missing
    font draws the same missing-glyph box for both."""
    if not shutil.which("fc-list") or not subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True,
                                                          text=True).stdout.strip():
        pytest.skip("no CJK font on this machine (make test installs Debian's fonts-noto-cjk as root)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(server + f"labs/{CHAPTERS[1].stem}.html", wait_until="load")
        result = page.evaluate("""() => {
          const el = [...document.querySelectorAll('main p, main em, main li')].find(e => /[\\u4e00-\\u9fff]/.test(e.innerText));
          if (!el) return null;
          const font = getComputedStyle(el).font;
          const draw = ch => { const c = document.createElement('canvas'); c.width = c.height = 64;
            const g = c.getContext('2d'); g.font = font.replace(/\\d+(\\.\\d+)?px/, '40px'); g.fillText(ch, 8, 48);
            return Array.from(g.getImageData(0, 0, 64, 64).data).join(','); };
          const chars = [...el.innerText].filter(ch => /[\\u4e00-\\u9fff]/.test(ch));
          return {font, chars: chars.slice(0, 2).join(''), same: draw(chars[0]) === draw(chars[1]),
                  distinct: chars[0] !== chars[1]};
        }""")
        browser.close()
    assert result is not None, "no Chinese text found on the chapter page"
    assert result["distinct"], f"the first Chinese characters found are the same: {result['chars']!r}"
    assert not result["same"], (f"{result['chars']!r} are drawn as the same shape in {result['font']!r}: "
                                "no font with Chinese glyphs was used")


def _shape(nb) -> tuple:
    """What an execution made of a chapter, less what differs from run to run (times, numbers, model ids): per
    code cell its number and its outputs' kinds (a stream's name, a display's mime types; a stream's
    consecutive pieces as one, their split being the kernel's flush timing); the widget models, counted, an
    Output widget with its outputs' kinds."""
    def kinds(outputs):
        found = []
        for out in outputs:
            kind = (out["output_type"], out["name"]) if out["output_type"] == "stream" else \
                (out["output_type"], tuple(sorted(out.get("data", {}))))
            if not (kind[0] == "stream" and found and found[-1] == kind):
                found.append(kind)
        return found
    cells = [(c.execution_count, kinds(c.outputs)) for c in nb.cells if c.cell_type == "code"]
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    models = sorted((m["model_name"], repr(kinds(m["state"].get("outputs", [])))) for m in state.values())
    return cells, models


def test_make_sites_execution_runs_a_chapter_as_the_notebook_tests_do(executed_chapter, tmp_path):
    """make site executes each chapter itself (build_site.execute, nbclient): on chapter 1, at this run's sizes,
    every code cell runs without an error, its panel's widget state is saved and shown as its last figure, and
    what it made has the shape of this run's executed chapter 1 (the notebook tests' execution, recorded by
    tests/chapter_runs.py): the same cells numbered alike, the same kinds of outputs, the same widgets."""
    import nbformat

    import chapter_runs
    chapter = CHAPTERS[0]
    with chapter_runs._kernel_environment():
        nb = chapter_runs.build_site.execute(chapter, tmp_path, 900)
    recorded = nbformat.read(executed_chapter(chapter), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code) and not any(o["output_type"] == "error" for c in code for o in c.outputs)
    assert _shape(nb) == _shape(recorded)
    assert chapter_runs.build_site.staticize(nb) >= 1, f"{chapter.name}: no widget shown as its last output"
