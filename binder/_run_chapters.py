"""Run chapters in kernels, as JupyterLab would, inside the cgroup binder/emulate.py made (its helper).

    python _run_chapters.py MODE RESULT.json PAUSE_S CELL_TIMEOUT_S NB1.ipynb NB2.ipynb ...
    python _run_chapters.py MODE,MODE,... RESULT-{mode}.json PAUSE_S CELL_TIMEOUT_S NB.ipynb   # one chapter

MODE ``alone``: each chapter in a fresh kernel, shut down afterwards. MODE ``open``: each chapter in
a fresh kernel that stays open (and idle) while the next chapters run, with PAUSE_S seconds between
chapters. MODE ``back-to-back``: the same with no pause at all (Run All in one tab, then the next:
an instructor's demo). Every cell runs, as Run All would until the first error and on past it, so that
every failing cell is counted. Per chapter: wall time, the cgroup's peak memory (reset before the
chapter), the cells that failed and the first error, what netlab said it freed from idle chapters,
and every process in the cgroup when the chapter ended (its RSS and anonymous memory, and what it
is), which says where the memory went when a chapter was refused, the OOM kills the cgroup counted
while it ran, and netlab's memory checks in its kernel ($NETLAB_MEMORY_LOG: what was free, the
estimate, what was asked for). At the end: the OOM kills the
cgroup counted during this mode, and the processes still in it once every kernel was shut down.
With a single chapter, several modes (comma-separated) come from one run of it (see ``one_chapter``).
"""
from __future__ import annotations

import json
import os
import sys
import time

import nbformat
from nbclient import NotebookClient


def cgroup_file(name_v1: str, name_v2: str) -> str:
    path = os.environ["NETLAB_CGROUP"]
    return os.path.join(path, name_v2 if os.path.exists(os.path.join(path, name_v2)) else name_v1)


def read_int(name_v1, name_v2) -> int:
    with open(cgroup_file(name_v1, name_v2)) as f:
        return int(f.read().split()[0])


def reset_peak():
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        path = os.path.join(os.environ["NETLAB_CGROUP"], name)
        if os.path.exists(path):
            try:
                with open(path, "w") as f:
                    f.write("0")
            except OSError:
                pass


def processes() -> list[dict]:
    """Every process in the cgroup now: pid, VmRSS and RssAnon (MB), and its command line, shortened."""
    out = []
    for pid in open(os.path.join(os.environ["NETLAB_CGROUP"], "cgroup.procs")).read().split():
        try:
            status = open(f"/proc/{pid}/status").read()
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:                                  # it ended meanwhile
            continue
        mb = {ln.split(":")[0]: int(ln.split()[1]) // 1024 for ln in status.splitlines()
              if ln.startswith(("VmRSS", "RssAnon"))}
        what = ("kernel" if "ipykernel" in cmd else "fork server or rank" if "forkserver" in cmd else
                "resource tracker" if "resource_tracker" in cmd else "runner" if "_run_chapters" in cmd else
                "JupyterLab server" if "jupyter-lab" in cmd or "jupyterlab" in cmd else cmd[:60])
        out.append({"pid": int(pid), "rss_mb": mb.get("VmRSS", 0), "anon_mb": mb.get("RssAnon", 0), "what": what})
    return out


def oom_kills() -> int:
    path = os.environ["NETLAB_CGROUP"]
    for name in ("memory.events", "memory.oom_control"):
        try:
            text = open(os.path.join(path, name)).read()
        except OSError:
            continue
        return next((int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("oom_kill ")), 0)
    return 0


def _failures(nb) -> tuple[list[int], str, list[str]]:
    """(numbers of the cells that raised, the first error, netlab's 'freed ...' lines) from the outputs."""
    failed, first, freed = [], "", []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                failed.append(index)
                if not first:
                    lines = (out.get("evalue") or "").strip().splitlines()
                    first = f"{out.get('ename')}: {lines[-1] if lines else ''}"
            elif out.get("output_type") == "stream":
                freed += [ln for ln in out.get("text", "").splitlines() if ln.startswith("netlab: freed ")]
    return sorted(set(failed)), first, freed


def checks_of(notebook: str) -> list[dict]:
    """The memory checks (netlab.runtime.memory, one JSON line each in $NETLAB_MEMORY_LOG) of `notebook`'s kernel."""
    path = os.environ.get("NETLAB_MEMORY_LOG")
    found = []
    for line in (open(path).read().splitlines() if path and os.path.exists(path) else []):
        try:
            check = json.loads(line)
        except ValueError:
            continue
        if check.get("notebook") == notebook:
            found.append(check)
    return found


def _run(path: str, timeout_s) -> tuple:
    """`path` top to bottom in a fresh kernel, left running: (client, notebook, error, started, OOM kills before)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=float(timeout_s), kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": os.path.dirname(path)}})
    reset_peak()
    kills_at_start = oom_kills()
    started = time.monotonic()
    error = ""
    try:
        client.km = client.create_kernel_manager()
        # as JupyterLab's server does, tell the kernel which notebook it runs (netlab names it)
        client.start_new_kernel(env=dict(os.environ, JPY_SESSION_NAME=path))
        client.start_new_kernel_client()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    except Exception as exc:  # noqa: BLE001 -- a dead kernel or a timeout: report it, go on
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    return client, nb, error, started, kills_at_start


def _row(path, nb, error, started, kills_at_start, label="") -> dict:
    """The chapter's row, measured now (its kernel shut down or still open, as the mode has it)."""
    wall = time.monotonic() - started
    failed, first, freed = _failures(nb)
    peak = read_int("memory.max_usage_in_bytes", "memory.peak")
    row = {"chapter": os.path.basename(path), "wall_s": round(wall, 1), "peak_bytes": peak,
           "ok": not error and not failed, "error": error or first, "failed_cells": failed,
           "freed": freed, "oom_kills": oom_kills() - kills_at_start,
           "checks": checks_of(os.path.basename(path)), "in_use_after_bytes": read_int("memory.usage_in_bytes", "memory.current"),
           "processes": processes()}
    print(f"  {label}{row['chapter']}: {wall:.1f} s, peak {peak / 1e6:.0f} MB, OOM kills {row['oom_kills']}"
          f"{f', cells failed {failed}' if failed else ''} {error or first} {' '.join(freed)}", flush=True)
    return row


def _left_behind() -> list[dict]:
    time.sleep(2.0)                                   # what a kernel started has two seconds to go
    return [p for p in processes() if p["what"] not in ("runner", "JupyterLab server") and p["pid"] != os.getpid()]


def main(mode, out, pause_s, timeout_s, *notebooks) -> int:
    if "," in mode:
        return one_chapter(mode.split(","), out, timeout_s, *notebooks)
    rows, open_clients = [], []
    kills_before = oom_kills()
    keep_open = mode in ("open", "back-to-back")
    for i, path in enumerate(notebooks):
        if mode == "open" and i:
            time.sleep(float(pause_s))
        client, nb, error, started, kills_at_start = _run(path, timeout_s)
        if keep_open:
            open_clients.append(client)
        else:
            _shut_down(client)
        rows.append(_row(path, nb, error, started, kills_at_start))
    end = read_int("memory.usage_in_bytes", "memory.current")
    for client in open_clients:
        _shut_down(client)
    left = _left_behind()
    with open(out, "w") as f:
        json.dump({"chapters": rows, "oom_kills": oom_kills() - kills_before, "end_bytes": end,
                   "left_behind": left}, f, indent=2)
    return 0


def one_chapter(modes: list[str], out: str, timeout_s, path: str) -> int:
    """Every mode in `modes` for a single chapter, from one run of it. With one chapter the modes run the
    same steps -- a fresh kernel runs it top to bottom; no pause, as that only comes between chapters --
    and differ only in when the chapter's row is measured: ``open`` and ``back-to-back`` with its kernel
    still open, ``alone`` once it is shut down. So it runs once, is measured with its kernel open, shut
    down, measured again, and each mode's results go to `out` with ``{mode}`` replaced by its name."""
    kills_before = oom_kills()
    client, nb, error, started, kills_at_start = _run(path, timeout_s)
    rows = {}
    if set(modes) - {"alone"}:
        rows["open"] = _row(path, nb, error, started, kills_at_start, "kernel open: ")
        open_end = read_int("memory.usage_in_bytes", "memory.current")
    _shut_down(client)
    if "alone" in modes:
        rows["alone"] = _row(path, nb, error, started, kills_at_start, "kernel shut down: ")
    alone_end = read_int("memory.usage_in_bytes", "memory.current")
    left = _left_behind()
    for mode in modes:
        row = rows["alone" if mode == "alone" else "open"]
        with open(out.format(mode=mode), "w") as f:
            json.dump({"chapters": [row], "oom_kills": oom_kills() - kills_before,
                       "end_bytes": alone_end if mode == "alone" else open_end, "left_behind": left,
                       "one_run_for": modes}, f, indent=2)
    return 0


def _shut_down(client) -> None:
    try:
        client._cleanup_kernel()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
