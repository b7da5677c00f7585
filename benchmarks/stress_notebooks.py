"""Execute every chapter headless with nbclient, many times, under CPU load; report stalls.

    .venv/bin/python benchmarks/stress_notebooks.py                 # 20 runs, load 4x cores
    .venv/bin/python benchmarks/stress_notebooks.py --runs 3 --load 2 --chapters 01 02
    .venv/bin/python benchmarks/stress_notebooks.py --parallel 4 --load 1   # 4 chapters at once

What it does: starts `load` x (number of cores) busy-loop processes, then executes each chapter in
labs/ with a stock nbclient (CI=1, a fresh kernel per chapter, the kernel JupyterLab would start)
`runs` times; with --parallel N, N executions at once (each in its own process and kernel), so the
chapters themselves are part of the load and 20 runs take hours less than one at a time. It samples
the load average every 5 s and reports it: the claim "under a load of 4x the cores" is that figure.
A *stall* is a cell whose execute_reply came more than --stall-gap seconds after the
kernel went idle for it, or never came (the cell reached --timeout), or whose idle status never
came: the kernel had finished and the client did not see it. That is the signature of the lost wake-up described in
tests/test_headless_stall.py; a cell that is merely slow under load goes idle and replies together.
Cells slower than --slow-after seconds are listed too, as information. For every stall the script
prints what the client received for that cell and when (iopub busy, execute_input, outputs, iopub
idle, execute_reply); on a timeout it also asks the kernel for kernel_info on the shell channel and,
when py-spy is installed, dumps every thread of the kernel. It ends with per-chapter wall times
(median, max), failures, stalls and slow cells, and exits non-zero on any stall or failure.

Why: headless runs (nbconvert --execute, course graders) once stalled for exactly the cell timeout
right after a panel cell, the kernel idle. This script shows whether that is gone. It is run on
demand, not in CI: it loads the machine on purpose.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

LABS = Path(__file__).resolve().parents[1] / "labs"


def burn():
    """One busy core's worth of load (a `yes > /dev/null` that multiprocessing can stop)."""
    while True:
        pass


class RecordingClient(NotebookClient):
    """nbclient that keeps, per cell, when each kind of message arrived (seconds after the request)."""

    def __init__(self, nb, **kw):
        super().__init__(nb, **kw)
        self.events: dict[int, list[tuple[float, str]]] = {}
        self.cell_seconds: dict[int, float] = {}
        self.diagnosis: list[str] = []
        self._started = {}
        self.on_cell_execute = self._cell_execute
        self.on_cell_executed = self._cell_executed

    def _cell_execute(self, cell, cell_index):
        self._started[cell_index] = time.monotonic()
        self.events[cell_index] = []

    def _cell_executed(self, cell, cell_index, execute_reply):
        self.note(cell_index, "execute_reply (shell)")
        self.cell_seconds[cell_index] = time.monotonic() - self._started[cell_index]

    def note(self, cell_index, what):
        if cell_index in self._started:
            self.events[cell_index].append((time.monotonic() - self._started[cell_index], what))

    async def _async_handle_timeout(self, timeout, cell=None):
        self.diagnosis = await kernel_diagnosis(self)          # while the kernel is still there
        return await super()._async_handle_timeout(timeout, cell)

    def process_message(self, msg, cell, cell_index):
        kind = msg["msg_type"]
        what = f"{kind}:{msg['content'].get('execution_state')}" if kind == "status" else kind
        self.note(cell_index, what + " (iopub)")
        return super().process_message(msg, cell, cell_index)


async def kernel_diagnosis(client: RecordingClient) -> list[str]:
    """Does the kernel still answer on shell? What are its threads doing? (called on a timeout)"""
    lines = []
    kc, km = client.kc, client.km
    try:
        msg_id = kc.kernel_info()
        answered, deadline = False, time.monotonic() + 15
        while not answered and time.monotonic() < deadline:
            try:
                reply = await kc.shell_channel.get_msg(timeout=1)
            except Exception:
                continue
            lines.append(f"  shell message while stalled: {reply['msg_type']} "
                         f"(to {reply['parent_header'].get('msg_type')})")
            answered = reply["parent_header"].get("msg_id") == msg_id
        lines.append(f"  kernel answered a kernel_info_request on shell within 15 s: {answered}")
    except Exception as exc:                                     # the probe is best effort
        lines.append(f"  kernel_info probe failed: {exc!r}")
    process = getattr(getattr(km, "provisioner", None), "process", None)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if process is not None and Path(spy).exists():
        dump = subprocess.run([spy, "dump", "--pid", str(process.pid)], capture_output=True, text=True,
                              timeout=60)
        lines += ["  py-spy dump of the kernel:"] + ["    " + s for s in (dump.stdout + dump.stderr).splitlines()]
    return lines


def late_reply(events) -> float | None:
    """Seconds from the cell's iopub idle to its execute_reply (None: no reply; inf: no idle)."""
    idle = next((t for t, w in events if w.startswith("status:idle")), None)
    reply = next((t for t, w in events if w.startswith("execute_reply")), None)
    if reply is None:
        return None
    return math.inf if idle is None else reply - idle


def run_chapter(path: Path, timeout: float, stall_gap: float, slow_after: float) -> dict:
    """Execute one chapter in a fresh kernel; return wall time, stalls, slow cells and the error if any."""
    nb = nbformat.read(path, as_version=4)
    client = RecordingClient(nb, timeout=int(timeout), kernel_name="python3",
                             resources={"metadata": {"path": str(LABS)}}, iopub_timeout=10)
    started = time.monotonic()
    error, stalls = None, []
    try:
        client.execute()
    except CellTimeoutError as exc:
        error = f"CellTimeoutError: {str(exc).splitlines()[0]}"
    except (CellExecutionError, DeadKernelError) as exc:
        error = f"{type(exc).__name__}: {str(exc)[-400:]}"
    wall = time.monotonic() - started
    slow = []
    for index, events in client.events.items():
        seconds, gap = client.cell_seconds.get(index), late_reply(events)
        if gap is None or gap > stall_gap:
            stalls.append({"cell": index, "seconds": seconds, "events": events})
        elif seconds > slow_after:
            slow.append((index, seconds))
    if stalls and client.diagnosis:
        stalls[-1]["diagnosis"] = client.diagnosis
    return {"chapter": path.name, "wall_s": wall, "error": error, "stalls": stalls, "slow": slow}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="executions of each chapter (default 20)")
    parser.add_argument("--load", type=float, default=4.0, help="busy processes per core (default 4)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a cell may run (default 300)")
    parser.add_argument("--stall-gap", type=float, default=5.0,
                        help="a reply this many seconds after the kernel went idle is a stall (default 5)")
    parser.add_argument("--slow-after", type=float, default=120.0,
                        help="list cells slower than this many seconds (default 120)")
    parser.add_argument("--parallel", type=int, default=1,
                        help="chapter executions at once, each with its own kernel (default 1)")
    parser.add_argument("--chapters", nargs="*", default=[], help="chapter prefixes, e.g. 01 04 (default: all)")
    args = parser.parse_args(argv)
    for name in ("runs", "timeout", "stall_gap", "slow_after"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')}: must be greater than zero")
    if args.parallel < 1:
        parser.error("--parallel: must be at least 1")
    if args.load < 0:
        parser.error("--load: must be zero or more")
    chapters = [p for p in sorted(LABS.glob("*.ipynb")) if not args.chapters or p.name[:2] in args.chapters]
    if not chapters:
        parser.error(f"--chapters: no chapter in {LABS} matches {args.chapters}")
    os.environ["CI"] = "1"
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    cores = os.cpu_count() or 1
    burners = [mp.Process(target=burn, daemon=True) for _ in range(round(args.load * cores))]
    for b in burners:
        b.start()
    print(f"{len(burners)} busy processes on {cores} cores; {args.runs} run(s) of {len(chapters)} chapter(s), "
          f"{args.parallel} at once; "
          f"cell timeout {args.timeout:g} s; a stall: reply > {args.stall_gap:g} s after idle", flush=True)
    results, loads, done = [], [], threading.Event()

    def sample_load():
        while not done.wait(5):
            loads.append(os.getloadavg()[0])
    threading.Thread(target=sample_load, daemon=True).start()
    jobs = [(run, path) for run in range(1, args.runs + 1) for path in chapters]
    try:
        with ProcessPoolExecutor(args.parallel, mp_context=mp.get_context("spawn")) as pool:
            futures = {pool.submit(run_chapter, path, args.timeout, args.stall_gap, args.slow_after): run
                       for run, path in jobs}
            for future in as_completed(futures):
                run, r = futures[future], future.result()
                results.append(r)
                flag = " STALL" if r["stalls"] else ""
                slow = "".join(f"  (cell {i}: {s:.0f} s)" for i, s in r["slow"])
                print(f"run {run:2d} {r['chapter']:<32} {r['wall_s']:7.1f} s  load {os.getloadavg()[0]:5.1f}"
                      f"{'  ' + r['error'].splitlines()[0] if r['error'] else ''}{flag}{slow}", flush=True)
                for s in r["stalls"]:
                    took = "no reply" if s["seconds"] is None else f"{s['seconds']:.1f} s"
                    print(f"    cell {s['cell']}: {took}; received: "
                          + ", ".join(f"{w} @{t:.1f}s" for t, w in s["events"]), flush=True)
                    for line in s.get("diagnosis", []):
                        print(line, flush=True)
    finally:
        done.set()
        for b in burners:
            b.terminate()
        for b in burners:
            b.join()

    print("\nchapter                            runs  median s    max s  failures  stalls  slow cells")
    for path in chapters:
        rs = [r for r in results if r["chapter"] == path.name]
        walls = [r["wall_s"] for r in rs]
        print(f"{path.name:<34} {len(rs):4d}  {statistics.median(walls):8.1f} {max(walls):8.1f}  "
              f"{sum(bool(r['error']) for r in rs):8d}  {sum(len(r['stalls']) for r in rs):6d}  "
              f"{sum(len(r['slow']) for r in rs):10d}")
    stalls = sum(len(r["stalls"]) for r in results)
    failures = sum(bool(r["error"]) for r in results)
    if loads:
        print(f"load average (1 min) during the runs: mean {statistics.mean(loads):.1f}, "
              f"min {min(loads):.1f}, max {max(loads):.1f} on {cores} cores "
              f"(mean {statistics.mean(loads) / cores:.1f}x the cores)")
    print(f"total: {len(results)} chapter runs, {failures} failure(s), {stalls} stall(s)")
    return 1 if stalls or failures else 0


if __name__ == "__main__":
    sys.exit(main())
