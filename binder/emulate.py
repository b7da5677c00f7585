"""Build the Binder environment from binder/ as repo2docker would, then run every chapter in 1 CPU and 2 GB.

    python binder/emulate.py                      # full size, all three modes (takes a while on one CPU)
    python binder/emulate.py --ci --chapters 1,2  # small version
    python binder/emulate.py --ci --chapters 1 --modes alone,open --cache ~/.cache/netlab/binder --out DIR
                                                  # the slow test: the environment kept between runs

What it does, in repo2docker's order (repo2docker/buildpacks/base.py: pre-assemble, copy, assemble,
postBuild, start):
1. a fresh virtual environment (``--venv``) with Python from runtime.txt when this machine has it;
2. ``pip install -r binder/requirements.txt``. PyTorch's CPU index cannot be reached from this
   machine, so the ``+cpu`` pin is replaced by the same version from the local CPU wheel
   (``torch==2.13.0``) and the ``--extra-index-url`` line is dropped -- the build is otherwise
   Binder's. Binder's base image adds the notebook server packages; ``ipykernel`` and ``nbclient``
   stand in for them here (a kernel is what runs the chapters). The pip that installs them is the
   current release, as repo2docker's base environment takes conda-forge's current pip
   (environment.py-3.11.yml), not the older one this Python bundles. It installs with
   ``--no-compile``: the same packages and files, without the ``.pyc`` of every module (about
   9,000, most never imported; compiling them all costs more CPU than the rest of the install).
   Python compiles a module on its first import and leaves its ``.pyc`` for the next (the kernels
   run without ``PYTHONDONTWRITEBYTECODE``, as on Binder), so what changes is that the first
   JupyterLab server and kernel in a new environment compile what they import, inside the cgroup:
   that chapter's peak memory comes out higher for it (about 150 MB at CI size), never lower;
3. ``binder/postBuild`` (installs netlab itself), then every kernel starts through ``binder/start``
   (its environment variables), pinned to one CPU (``taskset -c 0``), inside a memory cgroup
   limited to ``--memory`` (2 GB, mybinder.org's limit; cgroup v2 or v1, root needed).
4. Each chapter runs top to bottom at full size (CI unset; ``--ci`` shrinks it) in up to three
   modes (``--modes``): ``alone``, one kernel at a time (each shut down after its chapter);
   ``open``, with every earlier chapter's kernel left open, as JupyterLab leaves them, with
   ``--pause`` seconds between chapters (a student reading on) and the pools' idle release at
   ``NETLAB_IDLE_S``; ``back-to-back``, the same without any pause (Run All in one tab, then the
   next: an instructor's demo), where an idle pool gives its ranks back only when another chapter
   asks for them. With a single chapter the modes are one and the same run (a fresh kernel runs
   it; the pause comes only between chapters) and differ only in whether the chapter is measured
   before or after its kernel is shut down, so it runs once: measured with its kernel open (open,
   back-to-back), then shut down and measured again (alone), JupyterLab's server started once.
   Printed per chapter: wall time, the cgroup's peak memory, the cells that failed
   (every cell runs, so each failure is counted), what netlab freed from idle chapters; per mode:
   the OOM kills the cgroup counted and the processes left in it once every kernel was shut down.

``--cache DIR`` keeps the environment between runs in ``DIR/<key>``, the key a hash of what a build
from scratch depends on: binder/requirements.txt as installed here, the stand-ins, the Python that
runtime.txt picks and this script's build steps. Any change to those builds a fresh environment from
scratch, as does one built more than ``--max-age`` hours ago (new releases of the unpinned packages);
otherwise the one built before is checked against the requirements (pip, offline: every requirement and
its dependencies installed), and ``binder/postBuild`` runs again in it when the checkout, its
pyproject.toml or postBuild changed since it last ran there. A run that finds the environment in use by
another run builds its own in ``--venv``.

JupyterLab's server runs inside the same cgroup for the whole run (Binder's base image starts it; here
it is installed beside the stand-ins), listening on loopback only, so its memory counts as on Binder;
``--no-server`` leaves it out. Left out: the kernels are started by nbclient, not by that server (the
same ipykernel processes, without the server's websocket traffic), the browser (it runs on the
student's machine), and the image build's own 2 GB limit.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINDER = os.path.join(REPO, "binder")
LOCAL_TORCH = "torch==2.13.0"            # this machine's CPU wheel: the same build as Binder's 2.13.0+cpu
STAND_INS = ["ipykernel>=6", "nbclient>=0.10", "nbformat>=5.9", "jupyterlab>=4"]


def log(*args):
    print(*args, flush=True)


def _requirements_here(path: str) -> tuple[list[str], list[str]]:
    changes, lines = [], []
    for line in open(path):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("--extra-index-url") or s.startswith("--index-url"):
            changes.append(f"dropped '{s}' (PyTorch's index cannot be reached from here)")
            continue
        if s.startswith("torch==") and "+cpu" in s:
            changes.append(f"'{s}' -> '{LOCAL_TORCH}' (this machine's local CPU wheel)")
            s = LOCAL_TORCH
        lines.append(s)
    return lines, changes


def requirements_here(path: str, out: str) -> list[str]:
    """binder/requirements.txt with the CPU index dropped and torch's +cpu pin made local; the changes."""
    lines, changes = _requirements_here(path)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return changes


def _runtime_python() -> str:
    runtime = open(os.path.join(BINDER, "runtime.txt")).read().strip().replace("python-", "python")
    return shutil.which(runtime) or sys.executable


def _bundled_pip(base: str) -> str | None:
    """The pip wheel that `base` bundles for ensurepip, or None (some distributions' Pythons have none)."""
    run = subprocess.run([base, "-c", "import ensurepip, glob, os; print(*glob.glob(os.path.join("
                          "os.path.dirname(ensurepip.__file__), '_bundled', 'pip-*.whl')))"],
                         capture_output=True, text=True)
    return (run.stdout.split() or [None])[0] if run.returncode == 0 else None


def _install(venv: str) -> None:
    """A fresh virtual environment at `venv` with binder/requirements.txt and the stand-ins installed."""
    shutil.rmtree(venv, ignore_errors=True)
    base = _runtime_python()
    log(f"build: {base} -m venv {venv}  (runtime.txt asks for {os.path.basename(base)})")
    # pip: a current release, as repo2docker's base environment takes conda-forge's current pip (this
    # Python bundles an older one, which spends most of the resolution matching wheel tags). The bundled
    # pip, run from its wheel, installs it into the bare environment, rather than ensurepip installing
    # the bundled one only to replace it. --no-compile: see the module's docstring.
    wheel = _bundled_pip(base)
    subprocess.run([base, "-m", "venv", *(["--without-pip"] if wheel else []), venv], check=True)
    python = os.path.join(venv, "bin", "python")
    req = os.path.join(venv, "requirements-here.txt")
    for change in requirements_here(os.path.join(BINDER, "requirements.txt"), req):
        log(f"build: requirements.txt: {change}")
    started = time.monotonic()
    install = ["install", "--quiet", "--no-cache-dir", "--no-compile"]
    subprocess.run([python, *([os.path.join(wheel, "pip")] if wheel else ["-m", "pip"]), *install, "--upgrade", "pip"],
                   check=True)
    subprocess.run([python, "-m", "pip", *install, "-r", req, *STAND_INS], check=True)
    log(f"build: requirements installed in {time.monotonic() - started:.0f} s")


def _post_build(venv: str) -> None:
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    subprocess.run(["bash", os.path.join(BINDER, "postBuild")], cwd=REPO, env=env, check=True)


def build(venv: str, reuse: bool) -> str:
    python = os.path.join(venv, "bin", "python")
    if reuse and os.path.exists(os.path.join(venv, ".binder-built")):
        log(f"build: reusing {venv}")
        return python
    _install(venv)
    _post_build(venv)
    open(os.path.join(venv, ".binder-built"), "w").close()
    return python


def env_key() -> str:
    """What an environment built from scratch depends on, hashed: binder/requirements.txt as installed
    here, the stand-ins, the Python that runtime.txt picks (its version and build) and the steps of
    ``_install``. Equal keys: a build from scratch now would install the same requirements the same way."""
    h = hashlib.sha256()
    h.update("\n".join(_requirements_here(os.path.join(BINDER, "requirements.txt"))[0] + ["--"] + STAND_INS).encode())
    base = _runtime_python()
    h.update(subprocess.run([base, "-c", "import sys; print(sys.version, sys.platform)"], capture_output=True,
                            check=True).stdout)
    h.update(inspect.getsource(_install).encode())
    return h.hexdigest()[:16]


def satisfied(venv: str) -> str:
    """'' if every requirement (binder/requirements.txt as installed here, the stand-ins) and their
    dependencies are installed in `venv`, else pip's complaint: a dry run offline, with no index."""
    req = os.path.join(venv, "requirements-here.txt")
    requirements_here(os.path.join(BINDER, "requirements.txt"), req)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    run = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--dry-run", "--no-index",
                          "--quiet", "-r", req, *STAND_INS], env=env, capture_output=True, text=True)
    return "" if run.returncode == 0 else (run.stderr or run.stdout).strip()[-500:]


KEEP_ENVS = 2                     # environments kept in a --cache folder (each about 1.3 GB), most recently used


def cached(cache: str, max_age_h: float, fallback: str):
    """(python, lock) of the environment for this binder/ in `cache` (see the module's docstring); the
    lock, held until the run ends, keeps other runs from using or removing it meanwhile. In use by
    another run: a fresh build at `fallback` instead (lock None)."""
    os.makedirs(cache, exist_ok=True)
    key = env_key()
    venv = os.path.join(cache, key)
    lock = open(venv + ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        log(f"build: {venv} is in use by another run: building a fresh environment at {fallback}")
        return build(fallback, reuse=False), None
    stamp = os.path.join(venv, ".binder-built")
    age_h = (time.time() - float(open(stamp).read() or 0)) / 3600 if os.path.exists(stamp) else None
    why = ("none built yet" if age_h is None else f"built {age_h:.0f} h ago, over --max-age {max_age_h:g} h"
           if age_h > max_age_h else satisfied(venv))
    if why:
        log(f"build: from scratch in {venv} ({why[:300]})")
        _install(venv)
        with open(stamp, "w") as f:
            f.write(str(time.time()))
    else:
        log(f"build: reusing {venv}, built {age_h:.1f} h ago from the same requirements, stand-ins, Python and "
            "steps (key " + key + "); every requirement is installed in it")
    # binder/postBuild installs this checkout's netlab (editable): again whenever the environment is new,
    # or the checkout, its pyproject.toml or postBuild differ from the last time it ran in it
    post = hashlib.sha256(REPO.encode() + b"\0" + open(os.path.join(REPO, "pyproject.toml"), "rb").read() + b"\0"
                          + open(os.path.join(BINDER, "postBuild"), "rb").read()).hexdigest()
    post_stamp = os.path.join(venv, ".binder-postbuilt")
    if why or not os.path.exists(post_stamp) or open(post_stamp).read() != post:
        _post_build(venv)
        with open(post_stamp, "w") as f:
            f.write(post)
    else:
        log(f"build: binder/postBuild ran in it before for {REPO} and the same pyproject.toml and postBuild")
    os.utime(venv)                                   # last used: now
    _prune(cache, keep=venv)
    return os.path.join(venv, "bin", "python"), lock


def _prune(cache: str, keep: str) -> None:
    """Remove the environments in `cache` beyond the KEEP_ENVS most recently used, unless in use."""
    envs = sorted((os.path.join(cache, d) for d in os.listdir(cache) if os.path.isdir(os.path.join(cache, d))),
                  key=os.path.getmtime, reverse=True)
    for venv in [e for e in envs if e != keep][KEEP_ENVS - 1:]:
        with open(venv + ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            log(f"build: removing {venv} (not among the {KEEP_ENVS} most recently used)")
            shutil.rmtree(venv, ignore_errors=True)
            os.unlink(venv + ".lock")


class MemoryCgroup:
    """A fresh memory cgroup with a limit; peak usage read (and reset) per chapter."""

    def __init__(self, limit_bytes: int):
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        base = "/sys/fs/cgroup" if self.v2 else "/sys/fs/cgroup/memory"
        if not os.path.isdir(base):
            raise RuntimeError("no memory cgroup hierarchy at /sys/fs/cgroup (v2) or /sys/fs/cgroup/memory (v1)")
        self.path = os.path.join(base, f"netlab-binder-{os.getpid()}")
        os.mkdir(self.path)                          # PermissionError unless root
        self._write("memory.max" if self.v2 else "memory.limit_in_bytes", str(limit_bytes))
        if not self.v2 and os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
            self._write("memory.memsw.limit_in_bytes", str(limit_bytes))       # no swapping out of it
        self.limit = limit_bytes

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def _read(self, name) -> str:
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def reset_peak(self):
        if not self.v2:
            self._write("memory.max_usage_in_bytes", "0")
        elif os.path.exists(os.path.join(self.path, "memory.peak")):
            try:
                self._write("memory.peak", "0")          # kernels >= 6.12 accept a reset
            except OSError:
                pass

    def peak(self) -> int:
        return int(self._read("memory.peak" if self.v2 else "memory.max_usage_in_bytes"))

    def current(self) -> int:
        return int(self._read("memory.current" if self.v2 else "memory.usage_in_bytes"))

    def oom_kills(self) -> int:
        text = self._read("memory.events" if self.v2 else "memory.oom_control")
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.2)


def start_server(shell: str, venv: str, out_dir: str, env: dict, cpu: str) -> subprocess.Popen:
    """JupyterLab's server inside the cgroup on the same CPU, on loopback, started and idle (as a
    student's Binder session has it while the notebooks run)."""
    log_path = os.path.join(out_dir, "jupyterlab.log")
    cmd = ["taskset", "-c", cpu, os.path.join(venv, "bin", "jupyter"), "lab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0", f"--ServerApp.root_dir={os.path.join(REPO, 'labs')}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    logf = open(log_path, "w")
    proc = subprocess.Popen(["sh", "-c", shell, "sh", *cmd], cwd=REPO, env=env, stdout=logf, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab's server exited ({proc.returncode}); see {log_path}")
        if "http://127.0.0.1" in open(log_path).read():
            break
        time.sleep(0.5)
    else:
        proc.terminate()
        raise RuntimeError(f"JupyterLab's server did not start within 120 s; see {log_path}")
    time.sleep(3)                                   # its extensions finish loading
    rss = next((int(ln.split()[1]) // 1024 for ln in open(f"/proc/{proc.pid}/status") if ln.startswith("VmRSS")), 0)
    log(f"JupyterLab's server: pid {proc.pid}, {rss} MB resident, in the cgroup, on 127.0.0.1")
    return proc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--venv", default="/tmp/netlab-binder-venv")
    p.add_argument("--reuse", action="store_true", help="reuse an environment this script built before")
    p.add_argument("--cache", default=None, help="keep the environment in this folder, under a key of what its "
                   "build depends on; reused while that is unchanged and it is under --max-age hours old")
    p.add_argument("--max-age", type=float, default=24.0, help="hours a --cache environment is reused (default 24)")
    p.add_argument("--out", default=None, help="folder for the per-mode results and logs (default: --venv)")
    p.add_argument("--chapters", default="all", help="numbers, e.g. 1,2,3 (default: every chapter)")
    p.add_argument("--memory", type=float, default=2.0, help="memory limit in GB (10^9 bytes; default 2)")
    p.add_argument("--cpu", default="0", help="CPU list for taskset (default: one CPU, 0)")
    p.add_argument("--ci", action="store_true", help="run the chapters at CI size (a quick check)")
    p.add_argument("--modes", default="alone,open,back-to-back",
                   help="alone (one kernel at a time), open (all left open, --pause apart), back-to-back (no pause)")
    p.add_argument("--pause", type=float, default=40.0, help="seconds between chapters in 'open' mode")
    p.add_argument("--idle", type=float, default=30.0, help="NETLAB_IDLE_S for the kernels (binder/start's default on Binder: 30)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per cell")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--no-server", action="store_true", help="do not run JupyterLab's server in the cgroup")
    args = p.parse_args(argv)
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in ("alone", "open", "back-to-back"):
            p.error(f"--modes: alone, open or back-to-back, got {mode!r}")
    chapters = sorted(f for f in os.listdir(os.path.join(REPO, "labs")) if f.endswith(".ipynb")
                      and f[:2].isdigit() and (args.chapters == "all" or str(int(f[:2])) in args.chapters.split(",")))
    lock = None
    if args.cache:
        python, lock = cached(args.cache, args.max_age, args.venv)
    else:
        python = build(args.venv, args.reuse)
    venv = os.path.dirname(os.path.dirname(python))
    out_dir = args.out or args.venv
    os.makedirs(out_dir, exist_ok=True)
    cg = MemoryCgroup(int(args.memory * 1e9))
    env = dict(os.environ, PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"],
               NETLAB_IDLE_S=str(args.idle), NETLAB_CGROUP=cg.path, PYTHONNOUSERSITE="1")
    env.pop("CI", None)
    if args.ci:
        env["CI"] = "1"
    env.pop("VIRTUAL_ENV", None)
    # Binder's container does not set it: a module's first import leaves its .pyc for the next
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    results = {}
    try:
        # one chapter: every mode is the same run (a fresh kernel runs it; the pause comes only between
        # chapters), measured with its kernel open and again once it is shut down: run it once for all
        runs = [modes] if len(chapters) == 1 and len(modes) > 1 else [[mode] for mode in modes]
        for group in runs:
            mode = ",".join(group)
            out = os.path.join(out_dir, "results-{mode}.json" if len(group) > 1 else f"results-{mode}.json")
            cmd = ["taskset", "-c", args.cpu, os.path.join(BINDER, "start"), python,
                   os.path.join(BINDER, "_run_chapters.py"), mode, out, str(args.pause), str(args.timeout),
                   *[os.path.join(REPO, "labs", c) for c in chapters]]
            env["NETLAB_MEMORY_LOG"] = os.path.join(out_dir, f"memory-checks-{'+'.join(group)}.jsonl")
            if os.path.exists(env["NETLAB_MEMORY_LOG"]):
                os.unlink(env["NETLAB_MEMORY_LOG"])
            log(f"\n== {mode}: {len(chapters)} chapters, 1 CPU ({args.cpu}), {args.memory:g} GB cgroup {cg.path}"
                + (" (one chapter: one run serves every mode)" if len(group) > 1 else ""))
            # join the cgroup, then become the runner: every kernel and rank it starts is inside
            shell = f'echo $$ > {cg.path}/cgroup.procs && exec "$@"'
            server = None if args.no_server else start_server(shell, venv, out_dir, env, args.cpu)
            try:
                subprocess.run(["sh", "-c", shell, "sh", *cmd], cwd=REPO, env=env)
            finally:
                if server is not None:
                    server.terminate()
                    server.wait(timeout=30)
            for mode in group:
                path = out.format(mode=mode) if len(group) > 1 else out
                results[mode] = json.load(open(path)) if os.path.exists(path) else {"error": "runner died"}
    finally:
        cg.remove()
        if lock is not None:
            lock.close()
    log("\nchapter                          mode          wall_s   peak_MB  ok   note")
    for mode, rows in results.items():
        for row in rows.get("chapters", []):
            failed = f"cells failed {row['failed_cells']}: " if row.get("failed_cells") else ""
            log(f"{row['chapter']:32s} {mode:12s} {row['wall_s']:7.1f} {row['peak_bytes'] / 1e6:8.0f}  "
                f"{'yes' if row['ok'] else 'NO ':3s}  {failed}{'OOM kills %d: ' % row['oom_kills'] if row.get('oom_kills') else ''}{row.get('error', '')[:80]}")
            for line in row.get("freed", []):
                log(f"    {line}")
            for c in row.get("checks", []):                # netlab's memory checks in this chapter's kernel
                log(f"    check {c['what'][:34]:34s} free {c['available'] / 1e6:5.0f} MB (+{c['reusable'] / 1e6:.0f} own) "
                    f"need {c['need'] / 1e6:5.0f} MB + {c['headroom'] / 1e6:.0f}: {c['verdict']}"
                    + (f", asked {c['asked']}, freed by {len(c['released'])}" if c.get("asked") else ""))
            if not row["ok"] or row.get("oom_kills"):                      # where the memory was when it failed
                for proc in row.get("processes", []):
                    log(f"    pid {proc['pid']:>7d}  RSS {proc['rss_mb']:5d} MB  anon {proc['anon_mb']:5d} MB  {proc['what']}")
        if "error" in rows:
            log(f"{mode}: {rows['error']}")
        peak = max((row["peak_bytes"] for row in rows.get("chapters", [])), default=0)
        failed = sum(len(row.get("failed_cells", [])) for row in rows.get("chapters", []))
        left = rows.get("left_behind", [])
        log(f"{mode}: peak {peak / 1e6:.0f} MB, OOM kills {rows.get('oom_kills', '?')}, cells failed {failed}; "
            f"memory in use at the end {rows.get('end_bytes', 0) / 1e6:.0f} MB; processes left once every kernel "
            f"was shut down: {len(left)}" + "".join(f"\n    pid {p['pid']} {p['rss_mb']} MB {p['what']}" for p in left))
    load = os.getloadavg()
    log(f"machine load average (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "load": load, "ci": args.ci}, f, indent=2)
    ok = all(r.get("ok") for rows in results.values() for r in rows.get("chapters", [])) and \
        all("error" not in rows and not rows.get("oom_kills") and not rows.get("left_behind")
            for rows in results.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
