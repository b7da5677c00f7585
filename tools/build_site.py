"""Build netlab's website: every chapter executed, rendered by Jupyter Book 1 (`make site`).

    python tools/build_site.py                  # sizes from the environment: CI set -> CI sizes, else full
    python tools/build_site.py --chapters 1,2   # only these chapters (and the docs)
    python tools/build_site.py --reuse          # keep executed chapters whose inputs did not change
    python tools/build_site.py --out DIR        # the HTML in DIR (default _build/site), staged in DIR-src
    python tools/build_site.py --executed DIR   # chapters already executed, from DIR (tests/chapter_runs.py)

Steps, each printed with its wall time:
1. stage the book in _build/site-src/: site/ (config, intro, CSS), docs/*.md, labs/*.ipynb, and a
   generated contents page (each chapter's title, objectives and Binder button) and table of contents;
2. execute each chapter with nbclient, one kernel at a time (memory), in the staged labs/ folder (a
   chapter's files land there, not in the repository), under the environment's sizes: the notebooks
   read CI themselves. A cell that raises stops the build, naming the chapter and the cell;
3. turn each widget into what it last showed: a panel's Output widget's last outputs (its figure and
   text, from the widget state nbclient saved), the settings it was drawn at and a note that the live
   panel needs a kernel; a prediction's question and choices with the same note. The widget state is
   then dropped, so the pages load no widget JavaScript (and nothing from a CDN);
4. render with Jupyter Book (execute_notebooks: off), warnings reported, into _build/site/.

Executed chapters are kept in _build/site-exec/SIZE/ (ci or full) with a key (the chapter's JSON, the sizes, and the
netlab package's sources); --reuse skips a chapter whose key matches. --executed DIR skips step 2 altogether: each
chapter is taken from DIR/<chapter>.ipynb, an executed notebook that carries the same key (`make test` hands over the
chapters its notebook tests executed, tests/chapter_runs.py); a chapter missing there, or whose key differs (another
version of the chapter or of the package, or other sizes), stops the build.
"""
from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
SRC, EXEC, OUT, JB_OUT = BUILD / "site-src", BUILD / "site-exec", BUILD / "site", BUILD / "site-jb"   # see --out
DOCS = ("course", "instructors", "challenge", "architecture", "fabric", "scenarios")       # in this order, when present
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
LIVE_NOTE = ("This panel needs a running kernel to move: it shows the last figure it drew when this page was "
             "built, at the settings above. Launch the chapter on Binder (the rocket at the top of the page) "
             "or run it in JupyterLab to change them.")
QUESTION_NOTE = ("A prediction: in the live notebook you choose an answer and lock it, and only then does the "
                 "measurement that decides it run. Launch the chapter on Binder or run it in JupyterLab to answer.")


def chapters(only: set[int] | None = None) -> list[Path]:
    found = sorted((ROOT / "labs").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "labs").glob("appendix_*.ipynb"))
    if only is not None:
        found = [p for p in found if chapter_number(p) in only]
    return found


def chapter_number(path: Path) -> int | None:
    m = re.match(r"(\d\d)_", path.name)
    return int(m.group(1)) if m else (6 if path.name.startswith("appendix_linux_tcp") else None)


def config() -> dict:
    """The few values of site/_config.yml this script needs (the repository, for Binder links)."""
    text = (ROOT / "site" / "_config.yml").read_text()
    url = re.search(r"^\s*url:\s*(\S+)", text, re.M).group(1)
    branch = re.search(r"^\s*branch:\s*(\S+)", text, re.M).group(1)
    return {"url": url.rstrip("/"), "branch": branch}


def binder_url(cfg: dict, notebook: str) -> str:
    org_repo = cfg["url"].split("github.com/", 1)[1]
    return f"https://mybinder.org/v2/gh/{org_repo}/{cfg['branch']}?urlpath=lab/tree/{notebook}"


# ---- 1. objectives and the contents page ------------------------------------------------------------
def first_cell(nb: dict) -> str:
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    return "".join(cell["source"])


def title_and_objectives(nb: dict) -> tuple[str, str, list[str]]:
    """(title, its Chinese subtitle or '', the objectives list's items) from a chapter's first cell."""
    text = first_cell(nb)
    lines = text.splitlines()
    title = next(ln[2:].strip() for ln in lines if ln.startswith("# "))
    sub = next((ln.strip().strip("*") for ln in lines[1:4] if ln.strip().startswith("*")), "")
    items, inside = [], False
    for ln in lines:
        if re.match(r"\*\*What you will learn\*\*", ln.strip()):
            inside = True
            continue
        if inside:
            m = re.match(r"\s*\d+\.\s+(.*)", ln)
            if m:
                items.append(m.group(1).strip())
            elif ln.startswith("   ") and items:
                items[-1] += " " + ln.strip()
            elif items and not ln.strip():
                break
    if not items:                                 # no list: the first paragraph after the title says what it does
        paras = [p for p in re.split(r"\n\s*\n", text) if p.strip() and not p.lstrip().startswith(("#", "*"))]
        items = [" ".join(paras[0].split())] if paras else []
    return title, sub, items


def contents_page(cfg: dict, notebooks: list[Path], docs: list[str]) -> str:
    parts = [(ROOT / "site" / "intro.md").read_text().rstrip(), "", "## Chapters", "",
             '<div class="netlab-chapter-list">', ""]
    for path in notebooks:
        nb = json.loads(path.read_text())
        title, sub, items = title_and_objectives(nb)
        rel = f"labs/{path.name}"
        parts += [f"### [{title}]({rel})", ""]
        if sub:
            parts += [f"*{sub}*", ""]
        parts += ["What you will learn:", ""] + [f"{i}. {item}" for i, item in enumerate(items, 1)] + [""]
        parts += [f'<a class="netlab-binder" href="{binder_url(cfg, rel)}">Launch on Binder</a>', ""]
    parts += ["</div>", ""]
    if docs:
        parts += ["## For instructors and contributors", ""]
        for name in docs:
            head = next(ln[2:].strip() for ln in (ROOT / "docs" / f"{name}.md").read_text().splitlines()
                        if ln.startswith("# "))
            parts.append(f"* [{head}](docs/{name}.md)")
        parts.append("")
    return "\n".join(parts)


def toc(notebooks: list[Path], docs: list[str]) -> str:
    lines = ["format: jb-book", "root: index", "parts:", "  - caption: Chapters", "    chapters:"]
    lines += [f"      - file: labs/{p.stem}" for p in notebooks]
    if docs:
        lines += ["  - caption: For instructors and contributors", "    chapters:"]
        lines += [f"      - file: docs/{d}" for d in docs]
    return "\n".join(lines) + "\n"


def stage(cfg: dict, notebooks: list[Path], docs: list[str]) -> None:
    if SRC.exists():
        shutil.rmtree(SRC)
    shutil.copytree(ROOT / "site", SRC, ignore=shutil.ignore_patterns("intro.md"))
    (SRC / "labs").mkdir()
    (SRC / "docs").mkdir()
    for d in docs:
        shutil.copy(ROOT / "docs" / f"{d}.md", SRC / "docs" / f"{d}.md")
    for path in (ROOT / "labs").iterdir():           # data files a chapter reads beside it (none today)
        if path.is_file() and path.suffix not in (".ipynb", ".json") and not path.name.startswith("."):
            shutil.copy(path, SRC / "labs" / path.name)
    (SRC / "index.md").write_text(contents_page(cfg, notebooks, docs))
    (SRC / "_toc.yml").write_text(toc(notebooks, docs))


# ---- 2. execution ---------------------------------------------------------------------------------
def sizes() -> str:
    return "ci" if "CI" in os.environ else "full"


def package_digest() -> str:
    h = hashlib.sha256()
    for p in sorted((ROOT / "netlab").rglob("*.py")):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def key_of(path: Path, digest: str) -> str:
    h = hashlib.sha256(path.read_bytes())
    h.update(sizes().encode())
    h.update(digest.encode())
    return h.hexdigest()


def execute(path: Path, cwd: Path, timeout_s: float, expressions: dict[str, str] | None = None) -> dict:
    """Run one chapter top to bottom in a fresh kernel; the executed notebook (nbformat node).

    `expressions` (name -> Python expression), when given, are evaluated in the kernel once the last cell has
    run, before the kernel stops; their values (the text/plain of each) go to nb.metadata["netlab_expressions"]
    (tests/chapter_runs.py asks which torch modules the kernel imported)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", allow_errors=False,
                            store_widget_state=True, resources={"metadata": {"path": str(cwd)}})
    if expressions:
        client.on_cell_executed = _evaluate_after(client, nb, expressions)
    try:
        client.execute()
    except CellExecutionError as exc:
        index = next((i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"
                      and any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        last = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise SystemExit(f"build_site: {path.name}: cell {index} raised: {last}") from None
    except Exception as exc:  # noqa: BLE001 -- a dead kernel, a cell over the timeout: name the chapter
        raise SystemExit(f"build_site: {path.name}: {type(exc).__name__}: {exc}") from None
    return nb


def _evaluate_after(client, nb, expressions: dict[str, str]):
    """An nbclient on_cell_executed hook: after the last code cell that runs, `expressions` evaluated in the
    same kernel (a silent request's user_expressions), their values stored in nb.metadata["netlab_expressions"]."""
    from nbclient.util import ensure_async
    last = max((i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code" and c.source.strip()), default=None)

    async def hook(cell, cell_index, execute_reply):
        if cell_index != last:
            return
        msg_id = await ensure_async(client.kc.execute("", silent=True, store_history=False,
                                                      user_expressions=dict(expressions), allow_stdin=False))
        reply = await client.async_wait_for_reply(msg_id)
        values = {}
        for name, value in ((reply or {}).get("content", {}).get("user_expressions") or {}).items():
            values[name] = (value.get("data", {}).get("text/plain") if value.get("status") == "ok"
                            else f"{value.get('ename')}: {value.get('evalue')}")
        nb.metadata["netlab_expressions"] = values
    return hook


def executed_chapter(path: Path, key: str):
    """The executed chapter at `path` (--executed), which must carry `key`: else the build stops."""
    import nbformat
    if not path.exists():
        raise SystemExit(f"build_site: --executed: no {path}")
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get("netlab_site_key") != key:
        raise SystemExit(f"build_site: --executed: {path} was executed from another version of the chapter or of the "
                         "package, or at other sizes (its key differs): execute it again")
    return nb


# ---- 3. widgets as their last drawn figure --------------------------------------------------------
CONTROL_MODELS = ("SliderModel", "DropdownModel", "ToggleButtonsModel", "CheckboxModel", "RadioButtonsModel",
                  "TextModel", "SelectModel", "ToggleButtonModel", "IntTextModel", "FloatTextModel")


def _label(state: dict) -> str:
    return html.escape(state.get("description") or "")


def _value(state: dict) -> str | None:
    labels = state.get("_options_labels")
    if labels is not None:
        index = state.get("index")
        if isinstance(index, (list, tuple)):
            return ", ".join(labels[i] for i in index)
        return None if index is None else labels[index]
    value = state.get("value")
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return None if value is None else str(value)


def _status_line(value: str) -> bool:
    """A panel's status line (how long the last change took, or 'computing...'): meaningless on a page."""
    return bool(re.search(r"this change took|computing&hellip;|computing\.\.\.", value))


def _is_question(model_id: str, state: dict) -> bool:
    """A prediction (netlab.ui.predict): a widget with a 'Lock my answer' button and no output area."""
    names, stack = [], [model_id]
    while stack:
        model = state.get(stack.pop())
        if model is None:
            continue
        names.append((model["model_name"], model["state"].get("description") or ""))
        stack += [c[len("IPY_MODEL_"):] for c in model["state"].get("children", [])
                  if isinstance(c, str) and c.startswith("IPY_MODEL_")]
    return (any(n == "ButtonModel" and d.lower().startswith("lock") for n, d in names)
            and not any(n == "OutputModel" for n, _ in names))


def _descendants(model_id: str, state: dict) -> list[tuple[str, dict]]:
    """(model name, state) of the widget and everything inside it, depth first, in display order."""
    model = state.get(model_id)
    if model is None:
        return []
    found = [(model["model_name"], model["state"])]
    for child in model["state"].get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            found += _descendants(child[len("IPY_MODEL_"):], state)
    return found


def _progress_line(parts: list[tuple[str, dict]]) -> str | None:
    """A progress bar (tqdm's: an HBox of HTML, a progress bar, HTML) as one line, as it ended; None otherwise."""
    if not any(name.endswith("ProgressModel") for name, _ in parts):
        return None
    if any(name.endswith(CONTROL_MODELS) or name in ("ButtonModel", "OutputModel") for name, _ in parts):
        return None
    line = []
    for name, st in parts:
        if name.endswith("ProgressModel"):
            line.append(f'<progress value="{st.get("value", 0)}" max="{st.get("max", 100)}"></progress>')
        elif name in ("HTMLModel", "LabelModel") and (st.get("value") or "").strip():
            # tqdm's "[05:15<00:00, 34.55s/it]" is the build machine's wall clock: not the reader's
            value = re.sub(r"\s*\[[^\]]*(?:it/s|s/it|<)[^\]]*\]", "", st["value"]).strip()
            line.append(value if name == "HTMLModel" else html.escape(value))
    return '<div class="netlab-progress">' + " ".join(line) + "</div>"


def static_outputs(model_id: str, state: dict) -> list[dict]:
    """The outputs that stand for the widget `model_id`: what it shows now, in page order.

    A panel: its controls' values ("drawn at"), then its Output widget's outputs (text, figure), then
    the note that it needs a kernel. A prediction: its question and choices, then the note that the
    answer is locked, and the measurement run, in the live notebook (what it shows after its button
    is left out: it only appears once answered).
    """
    progress = _progress_line(_descendants(model_id, state))
    if progress is not None:
        return [{"output_type": "display_data", "metadata": {}, "data": {"text/html": progress}}]
    html_parts, outputs, settings = [], [], []
    question, after_button = _is_question(model_id, state), False

    def flush():
        if html_parts:
            outputs.append({"output_type": "display_data", "metadata": {},
                            "data": {"text/html": '<div class="netlab-static-widget">' + "\n".join(html_parts)
                                     + "</div>"}})
            html_parts.clear()

    def walk(mid: str):
        nonlocal after_button
        model = state.get(mid)
        if model is None:
            return
        name, st = model["model_name"], model["state"]
        if name == "ButtonModel":
            after_button = True
        elif name in ("HTMLModel", "HTMLMathModel", "LabelModel"):
            value = st.get("value") or ""
            if value.strip() and not _status_line(value) and not (question and after_button):
                html_parts.append(f"<div>{value if name != 'LabelModel' else html.escape(value)}</div>")
        elif name == "OutputModel":
            if settings:                           # a panel: the settings its figure was drawn at
                html_parts.append('<p class="netlab-settings">Drawn at: ' + " · ".join(settings) + "</p>")
                settings.clear()
            flush()
            for out in st.get("outputs", []):
                out = dict(out)
                if out.get("output_type") in ("display_data", "execute_result"):
                    out = {"output_type": "display_data", "metadata": out.get("metadata", {}),
                           "data": {k: v for k, v in out.get("data", {}).items() if k != WIDGET_VIEW}}
                    if not out["data"]:
                        continue
                outputs.append(out)
        elif question:
            if name == "RadioButtonsModel":
                html_parts.append('<ol class="netlab-options" type="a">'
                                  + "".join(f"<li>{html.escape(o)}</li>" for o in st.get("_options_labels", []))
                                  + "</ol>")
        elif name.endswith(CONTROL_MODELS):
            value = _value(st)
            if value:
                settings.append(f"{_label(st) or 'value'} <b>{html.escape(value)}</b>")
        for child in st.get("children", []):
            if isinstance(child, str) and child.startswith("IPY_MODEL_"):
                walk(child[len("IPY_MODEL_"):])

    walk(model_id)
    if settings:
        html_parts.append('<p class="netlab-settings">Settings: ' + " · ".join(settings) + "</p>")
    interactive = any(name.endswith(CONTROL_MODELS) or name == "ButtonModel" for name, _ in _descendants(model_id, state))
    if interactive:                                # a widget with nothing to move needs no note
        note = QUESTION_NOTE if question else LIVE_NOTE
        html_parts.append(f'<p class="netlab-live-note" data-netlab-widget="static">{html.escape(note)}</p>')
    flush()
    return outputs


def staticize(nb) -> int:
    """Replace every widget view in `nb` by static outputs; return how many were replaced."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    replaced = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        new = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW) if out.get("output_type") in ("display_data", "execute_result") else None
            if view is None:
                new.append(out)
                continue
            replaced += 1
            import nbformat
            new.extend(nbformat.from_dict(o) for o in static_outputs(view["model_id"], state))
        cell["outputs"] = new
    nb.metadata.pop("widgets", None)
    return replaced


def binder_cell(cfg: dict, path: Path):
    import nbformat
    url = binder_url(cfg, f"labs/{path.name}")
    return nbformat.v4.new_markdown_cell(
        f'<a class="netlab-binder" href="{url}">Launch this chapter on Binder</a> to run it live: '
        "make the predictions, move the panels' controls and write the exercises.")


# ---- 4. render ------------------------------------------------------------------------------------
def render() -> list[str]:
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        raise SystemExit("build_site: jupyter-book is not installed beside this Python "
                         "(pip install -e '.[site]', or `make site`)")
    if JB_OUT.exists():
        shutil.rmtree(JB_OUT)
    proc = subprocess.run([str(jb), "build", str(SRC), "--builder", "html", "--path-output", str(JB_OUT)],
                          capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    OUT.with_name(OUT.name + "-build.log").write_text(log)
    if proc.returncode != 0 or not (JB_OUT / "_build" / "html" / "index.html").exists():
        raise SystemExit(f"build_site: jupyter-book failed (exit {proc.returncode}); the end of its log:\n{log[-3000:]}")
    if OUT.exists():
        shutil.rmtree(OUT)
    shutil.move(str(JB_OUT / "_build" / "html"), str(OUT))
    shutil.rmtree(JB_OUT, ignore_errors=True)
    return [ln for ln in log.splitlines() if "WARNING" in ln or "ERROR" in ln]


def main(argv=None) -> int:
    global SRC, EXEC, OUT, JB_OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapters", help="comma-separated chapter numbers (6 includes the appendix); default all")
    given = ap.add_mutually_exclusive_group()
    given.add_argument("--reuse", action="store_true", help="keep executed chapters whose inputs did not change")
    given.add_argument("--executed", type=Path, metavar="DIR",
                       help="take every chapter executed from DIR/<chapter>.ipynb (its key must match) instead of executing it")
    ap.add_argument("--out", type=Path, default=OUT, help="where the HTML goes (default _build/site)")
    ap.add_argument("--cell-timeout", type=float, default=900, help="seconds one cell may run (default 900)")
    args = ap.parse_args(argv)
    OUT = args.out.resolve()
    SRC, JB_OUT, EXEC = OUT.with_name(OUT.name + "-src"), OUT.with_name(OUT.name + "-jb"), EXEC / sizes()
    only = None
    if args.chapters:
        try:
            only = {int(c) for c in args.chapters.split(",") if c.strip()}
        except ValueError:
            ap.error(f"--chapters: expected numbers such as 1,2, got {args.chapters!r}")
    notebooks = chapters(only)
    if not notebooks:
        ap.error(f"--chapters: no chapter numbered {args.chapters}")
    cfg = config()
    docs = [d for d in DOCS if (ROOT / "docs" / f"{d}.md").exists()]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

    started = time.monotonic()
    print(f"site: {len(notebooks)} chapter(s) at {sizes()} size, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    stage(cfg, notebooks, docs)
    if not args.executed:
        EXEC.mkdir(parents=True, exist_ok=True)
    digest = package_digest()
    import nbformat
    for path in notebooks:
        key, kept = key_of(path, digest), EXEC / path.name
        t0 = time.monotonic()
        if args.executed:
            nb, how = executed_chapter(args.executed / path.name, key), f"taken executed from {args.executed}"
        elif args.reuse and kept.exists() and nbformat.read(kept, as_version=4).metadata.get("netlab_site_key") == key:
            nb, how = nbformat.read(kept, as_version=4), "reused"
        else:
            nb, how = execute(path, SRC / "labs", args.cell_timeout), "executed"
            nb.metadata["netlab_site_key"] = key
            nbformat.write(nb, kept)
        n = staticize(nb)
        for name in [k for k in nb.metadata if k.startswith("netlab_")]:     # the build's own records: not the page's
            nb.metadata.pop(name)
        nb.cells.insert(1, binder_cell(cfg, path))
        nbformat.write(nb, SRC / "labs" / path.name)
        print(f"  {path.name}: {how} in {time.monotonic() - t0:.1f} s, {n} widget(s) shown as their last "
              f"output, load {os.getloadavg()[0]:.1f}", flush=True)
    for leftover in (SRC / "labs").glob("*.trace.json"):           # files the chapters wrote: not pages
        leftover.unlink()
    t0 = time.monotonic()
    warnings = render()
    print(f"  rendered in {time.monotonic() - t0:.1f} s, {len(warnings)} warning(s)"
          + "".join(f"\n    {w}" for w in warnings[:20]), flush=True)
    print(f"site: {OUT}/index.html in {time.monotonic() - started:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
