"""Run chapters in kernels, as JupyterLab would, inside the cgroup binder/emulate.py made (its helper).

    python _run_chapters.py MODE RESULT.json PAUSE_S CELL_TIMEOUT_S NB1.ipynb NB2.ipynb ...

MODE ``alone``: each chapter in a fresh kernel, shut down afterwards. MODE ``open``: each chapter in
a fresh kernel that stays open (and idle) while the next chapters run, with PAUSE_S seconds between
chapters. Per chapter: wall time, the cgroup's peak memory (reset before the chapter), the first error,
and every process in the cgroup when the chapter ended (its RSS and anonymous memory, and what it is),
which says where the memory went when a chapter was refused.
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


def main(mode, out, pause_s, timeout_s, *notebooks) -> int:
    rows, open_clients = [], []
    for i, path in enumerate(notebooks):
        if mode == "open" and i:
            time.sleep(float(pause_s))
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=float(timeout_s), kernel_name="python3",
                                resources={"metadata": {"path": os.path.dirname(path)}})
        reset_peak()
        started = time.monotonic()
        error = ""
        try:
            if mode == "open":
                client.km = client.create_kernel_manager()
                client.start_new_kernel()
                client.start_new_kernel_client()
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
                open_clients.append(client)
            else:
                client.execute()
        except Exception as exc:  # noqa: BLE001 -- report it and go on with the next chapter
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        wall = time.monotonic() - started
        peak = read_int("memory.max_usage_in_bytes", "memory.peak")
        rows.append({"chapter": os.path.basename(path), "wall_s": round(wall, 1), "peak_bytes": peak,
                     "ok": not error, "error": error,
                     "in_use_after_bytes": read_int("memory.usage_in_bytes", "memory.current"),
                     "processes": processes()})
        print(f"  {rows[-1]['chapter']}: {wall:.1f} s, peak {peak / 1e6:.0f} MB {error}", flush=True)
    end = read_int("memory.usage_in_bytes", "memory.current")
    for client in open_clients:
        try:
            client._cleanup_kernel()
        except Exception:  # noqa: BLE001
            pass
    with open(out, "w") as f:
        json.dump({"chapters": rows, "oom_kills": oom_kills(), "end_bytes": end}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
