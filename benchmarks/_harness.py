"""What the benchmark scripts share: a wall-clock timer, the machine's load, and one nbclient driver.

    from _harness import load, machine, run_notebook, seconds, timed
    t, result = timed(lambda: incast(16, 256 * 1024, 1e9 / 8))       # (wall seconds, what it returned)
    best = min(seconds(fn, repeat=3))                                 # each call's wall seconds
    print(machine())                                                  # "2 cores, load 3.1"
    run = run_notebook("labs/01_why_the_network.ipynb", ci=True)      # a fresh kernel, top to bottom
    run.total_s, run.cell_s, run.error

A wall time on a shared machine measures its load too, so every script prints ``machine()`` beside
its figures (at the start and, for long runs, at the end). Python puts a script's own folder first
on ``sys.path``, so ``import _harness`` works from ``python benchmarks/x.py`` with no package.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field


def timed(fn):
    """(wall seconds, fn())."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def seconds(fn, repeat: int = 1) -> list[float]:
    """The wall seconds of each of `repeat` calls of fn()."""
    return [timed(fn)[0] for _ in range(repeat)]


def load() -> float:
    """The 1-minute load average (runnable processes, averaged): above the core count, a wall time
    measures waiting for a core too."""
    return os.getloadavg()[0]


def machine() -> str:
    return f"{os.cpu_count()} cores, load {load():.1f}"


@dataclass
class NotebookRun:
    nb: object                                      # the executed notebook (nbformat), outputs filled in
    total_s: float                                  # wall seconds, kernel start to the last cell
    cell_s: dict = field(default_factory=dict)      # code cell index -> its wall seconds
    error: str = ""                                 # the failing cell's last line; "" when all ran
    load_before: float = 0.0
    load_after: float = 0.0

    def slowest(self, n: int = 3) -> list[tuple[int, float]]:
        return sorted(self.cell_s.items(), key=lambda kv: -kv[1])[:n]


def run_notebook(nb, *, ci: bool = True, timeout: float = 600.0, cwd: str | None = None, env: dict | None = None,
                 before: str | None = None, after: str | None = None, stop_on_error: bool = False) -> NotebookRun:
    """Run a chapter top to bottom in a fresh python3 kernel with a stock nbclient, as nbval and CI do.

    `nb`: a path or an nbformat notebook. ``ci`` sets CI=1 (the chapters' small sizes). `before` and
    `after` are code cells put first and last (what a script measures inside the kernel). `env` is set
    in this process's environment for the kernel to inherit. A failing cell ends the run and is
    reported in ``error`` (raised with ``stop_on_error``): the cells that ran are still timed.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    if isinstance(nb, (str, os.PathLike)):
        cwd = cwd or os.path.dirname(os.path.abspath(nb))
        nb = nbformat.read(nb, 4)
    if before is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(before))
    if after is not None:
        nb.cells.append(nbformat.v4.new_code_cell(after))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if ci:
        os.environ["CI"] = "1"
    else:
        os.environ.pop("CI", None)
    os.environ.update(env or {})
    starts, cell_s = {}, {}
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd or os.getcwd()}},
        on_cell_execute=lambda cell, cell_index: starts.__setitem__(cell_index, time.monotonic()),
        on_cell_executed=lambda cell, cell_index, execute_reply: cell_s.__setitem__(
            cell_index, time.monotonic() - starts[cell_index]))
    run = NotebookRun(nb, 0.0, cell_s, load_before=load())
    start = time.monotonic()
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as exc:
        if stop_on_error:
            raise
        last = max(starts) if starts else "?"
        run.error = f"cell [{last}]: {str(exc).strip().splitlines()[-1][:100]}"
    run.total_s, run.load_after = time.monotonic() - start, load()
    return run


def table(rows: list[dict], columns: list[str]) -> str:
    """Rows as a fixed-width text table (each column as wide as its widest cell)."""
    cells = [[str(c) for c in columns]] + [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths)] + lines[1:])
