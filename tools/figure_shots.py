"""Screenshot every figure and printed table of every chapter as a student sees it in JupyterLab.

    .venv/bin/python tools/figure_shots.py OUT/                         # every chapter, CI sizes
    .venv/bin/python tools/figure_shots.py OUT/ --full labs/05_topology.ipynb

Starts JupyterLab (default settings) over a copy of labs/, opens each chapter in headless Chromium
at 1400x900 (a laptop screen), runs all cells, and saves one PNG per cell output that holds a
figure, a panel or more than a few lines of text: OUT/<chapter>/cell<NN>-<k>.png. It prints, per
chapter, how many outputs it saved and any output that is wider than the notebook's column (a
figure or a line that does not fit without a scroll bar). Look at the pictures: that is the check.

Needs /usr/bin/chromium and the playwright Python package (the dev extra), like tests/test_browser.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from browser_driver import ROOT, Browser, JupyterLab, Notebook, unavailable  # noqa: E402

VIEWPORT = {"width": 1400, "height": 900}

# Per code cell: the index of the cell among code cells, and for each output area whether it holds an
# image or a widget, its text length, and whether its content is wider than the area (scrolls).
_OUTPUTS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].map((cell, i) => ({
  index: i,
  outputs: [...cell.querySelectorAll('.jp-OutputArea-child')].map(o => ({
     image: !!o.querySelector('img, canvas'), widget: !!o.querySelector('.widget-box, .jupyter-widgets'),
     lines: (o.innerText || '').split('\\n').length,
     overflow: [...o.querySelectorAll('.jp-OutputArea-output, pre, img')].some(e => e.scrollWidth > e.clientWidth + 2),
  })),
}))"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the screenshots")
    ap.add_argument("chapters", nargs="*", help="notebooks (default: every chapter in labs/)")
    ap.add_argument("--full", action="store_true", help="the chapters' full sizes (no CI=1 in the kernel)")
    ap.add_argument("--min-lines", type=int, default=4, help="save text outputs of at least this many lines")
    args = ap.parse_args(argv)
    reason = unavailable()
    if reason:
        sys.exit(f"cannot take screenshots: {reason}")
    chapters = [Path(c).name for c in args.chapters] or sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb"))
    problems = 0
    with JupyterLab(env={"CI": ""} if args.full else {}) as lab, Browser() as b:
        b.page.set_viewport_size(VIEWPORT)
        for chapter in chapters:
            nb = Notebook(b.page, lab, chapter)
            nb.open()
            nb.run_all(timeout_s=900)
            folder = args.out / Path(chapter).stem
            folder.mkdir(parents=True, exist_ok=True)
            saved, wide = 0, []
            cells = b.page.locator(".jp-Notebook .jp-Cell")
            for cell in b.page.evaluate(_OUTPUTS):
                for k, o in enumerate(cell["outputs"]):
                    if o["overflow"]:
                        wide.append(f"cell {cell['index']} output {k}")
                    if o["image"] or o["widget"] or o["lines"] >= args.min_lines:
                        area = cells.nth(cell["index"]).locator(".jp-OutputArea-child").nth(k)
                        area.scroll_into_view_if_needed()
                        box = area.bounding_box()
                        if not box or box["height"] > 8 * VIEWPORT["height"]:     # not laid out: skip, say so
                            wide.append(f"cell {cell['index']} output {k} (not laid out: {box})")
                            continue
                        tall = box["height"] > VIEWPORT["height"] - 150      # a taller window, same width
                        if tall:
                            b.page.set_viewport_size({**VIEWPORT, "height": int(box["height"]) + 300})
                            area.scroll_into_view_if_needed()
                        area.screenshot(path=str(folder / f"cell{cell['index']:02d}-{k}.png"))
                        if tall:
                            b.page.set_viewport_size(VIEWPORT)
                        saved += 1
            errors = nb.errors()
            print(f"{chapter:36s} {saved:3d} outputs saved in {folder}"
                  + (f"; wider than the column: {', '.join(wide)}" if wide else "")
                  + (f"; ERRORS: {errors}" if errors else ""), flush=True)
            problems += len(wide) + len(errors)
            lab.shut_down_kernels()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
