"""The challenge's grading host: ``python -m netlab.challenge._host``, and ``GradingHost``, with which
``board.py`` starts it and sends it entries.

One per ``netlab grade``: it starts one fork server with the judging preload (``_preload.py``: torch,
gloo, comm, the lab's blocks), then judges each entry it is sent in a process of the entry's own,
forked from that fork server (``_child.entry``): its own session, its own empty working folder, the
sandbox's CPU-time, file-size and core limits, its output through a pipe of its own of which only the
first KiB is kept, a wall-clock limit, and its whole process group killed when it is done. The entry's
ranks are forked from the same fork server, fresh for every entry, after the entry's process started:
no entry's code ever runs in the fork server or in this host, so none sees another's processes or
state. What an entry no longer pays for: starting Python, importing torch in its process, and
starting a fork server that imports torch again (about 3-5 CPU seconds an entry).

An entry that kills the fork server costs its own row; the next entry gets a fresh one. The board
(``board.judge_file``) starts a new host for the next entry if one dies or hangs. What the ranks share
across entries, unlike the entry's own process: the host's HOME (ranks take their working folder from
the entry's process, their environment from the fork server) and the host's output, where what a rank
prints goes (drained and thrown away; an entry's own process prints into its row's last output).

Protocol: one JSON line per entry on stdin (``{"spec": ..., "time_limit_s": ...}``), one JSON line per
verdict on the file descriptor named by the first argument (``{"result": ..., "why": ..., "output":
...}``, as ``assignment/sandbox.ChildRun``). The host's own stdout and stderr take what the fork
server and the ranks print (drained by the board, thrown away).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time

from ..assignment.sandbox import KEEP_OUTPUT, _kill_group, why_ended, with_last_output
from ..runtime import death


def _drain(fd: int, box: dict) -> None:
    kept, total = bytearray(), 0
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            if len(kept) < KEEP_OUTPUT:
                kept += chunk[:KEEP_OUTPUT - len(kept)]
    finally:
        os.close(fd)
    box["output"], box["bytes"] = kept.decode(errors="replace"), total


def _wait_gone(pid: int, started: str | None, deadline: float) -> bool:
    """Wait until process `pid` (started at `started`) has exited (or is a zombie); False at the deadline."""
    while time.monotonic() < deadline:
        if not death.running(pid, started):
            return True
        time.sleep(0.1)
    return False


def judge_one(ctx, forkserver, spec: dict, time_limit_s: float, *, work_root: str) -> dict:
    """One entry in a process of its own, forked from the fork server; what ``ChildRun`` holds."""
    from . import _child
    forkserver.ensure_running()                          # a fresh one if the last entry's run ended it
    work = tempfile.mkdtemp(prefix="entry-", dir=work_root)
    result = os.path.join(work, "result.json")
    out_r, out_w = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child.entry, name="netlab-challenge-entry",
                    args=(spec, work, result, out_w),
                    kwargs=dict(forkserver_address=forkserver._forkserver_address,
                                forkserver_pid=forkserver._forkserver_pid, cpu_s=int(time_limit_s * 2) + 10))
    started = time.monotonic()
    box: dict = {}
    try:
        p.start()
    finally:
        out_w.close()
    reader = threading.Thread(target=_drain, args=(os.dup(out_r.fileno()), box), daemon=True)
    out_r.close()
    reader.start()
    timed_out = False
    try:
        p.join(time_limit_s)
        timed_out = p.exitcode is None
        if p.exitcode == 255 and not os.path.exists(result):
            # multiprocessing's word for "the fork server died" (an entry's rank killed it, say): the entry's
            # process, no longer anyone's to report, may still be running and writing its verdict
            timed_out = not _wait_gone(p.pid, death.start_time(p.pid), started + time_limit_s)
    finally:
        _kill_group(p.pid)                               # anything the entry started in its session
        p.join()
    reader.join(timeout=10)
    seconds = time.monotonic() - started
    output, nbytes = box.get("output", ""), box.get("bytes", 0)
    try:
        if not timed_out and os.path.exists(result):
            with open(result) as f:
                return {"result": json.load(f), "why": "", "seconds": seconds, "output": output, "output_bytes": nbytes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if p.exitcode == 255 and not timed_out:              # the fork server died, and then so did the entry's process
        why = "the grading process ended, and its fork server with it (did the entry kill them?)"
    else:
        why = why_ended(p.exitcode, timed_out=timed_out, time_limit_s=time_limit_s)
    return {"result": None, "why": with_last_output(why, output), "seconds": seconds,
            "output": output, "output_bytes": nbytes}


class GradingHost:
    """The grading host (``_host.py``), started sandboxed as ``assignment/sandbox.run_child`` starts a
    process (its own session, an empty working folder and HOME, the CPU-time, file-size and core limits;
    its output drained and thrown away), which judges each entry it is sent in a process of the entry's
    own. ``judge(spec)`` returns what ``run_child`` would have (``ChildRun``); a host that dies or
    hangs costs the entry it was judging, and the next entry starts a new one."""

    def __init__(self, ranks: int, time_limit_s: float):
        self.ranks, self.time_limit_s = ranks, time_limit_s
        self.proc = None

    def start(self) -> str:
        """Start the host; '' once it is ready, else why not."""
        if self.proc is not None:
            return ""
        import subprocess
        import sys
        import tempfile
        import threading
        import time
        from ..assignment.sandbox import START_LIMIT, _drain, _limits
        self._work = tempfile.TemporaryDirectory(prefix="netlab-challenge-")
        home = os.path.join(self._work.name, "home")
        os.mkdir(home)
        env = dict(os.environ, HOME=home, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", MPLBACKEND="Agg",
                   NETLAB_MAX_RANKS=str(max(self.ranks, 16)))
        env.pop("NETLAB_IDLE_S", None)
        reply_r, reply_w = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "netlab.challenge._host", str(reply_w)],
                                         cwd=home, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(reply_w,),
                                         preexec_fn=_limits(int(self.time_limit_s * 2) + 10), text=True)
        finally:
            os.close(reply_w)
        self._replies = os.fdopen(reply_r)
        threading.Thread(target=_drain, args=(self.proc.stdout, {}), daemon=True).start()
        self._deadline = time.monotonic() + START_LIMIT
        if self._read() is None:
            return self._ended(f"the grading process did not start within {START_LIMIT} s "
                               "(the machine is overloaded?)")
        return ""

    def _read(self):
        """The host's next reply (a dict), or None if it ended or the deadline passed first."""
        import select
        import time
        while True:
            left = self._deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                return None
            line = self._replies.readline()
            return json.loads(line) if line else None

    def _ended(self, why: str) -> str:
        self.close(kill=True)
        return why

    def judge(self, spec: dict):
        import time
        from ..assignment.sandbox import ChildRun
        started = time.monotonic()
        why = self.start()
        if not why:
            try:
                self.proc.stdin.write(json.dumps({"spec": spec, "time_limit_s": self.time_limit_s}) + "\n")
                self.proc.stdin.flush()
            except OSError:
                pass
            self._deadline = time.monotonic() + self.time_limit_s + 60      # the host's own margin
            got = self._read()
            if got is not None:
                return ChildRun(result=got["result"], why=got["why"], seconds=got["seconds"], output=got["output"],
                                output_bytes=got["output_bytes"])
            alive = self.proc.poll() is None
            why = self._ended(f"time limit of {self.time_limit_s:g} s exceeded (the grading process hung)" if alive
                              else f"the grading process ended (status {self.proc.returncode}) while judging it")
        return ChildRun(result=None, why=why, seconds=time.monotonic() - started, output="", output_bytes=0)

    def close(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        import signal
        import subprocess
        try:
            self.proc.stdin.close()                         # the host's last entry: it exits
        except OSError:
            pass
        if not kill:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)       # its fork server, anything it started
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self._replies.close()
        self._work.cleanup()
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(reply_fd: int) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import multiprocessing as mp
    from multiprocessing import forkserver as mp_forkserver

    from netlab.runtime import pool, rundir
    from . import _child  # noqa: F401 -- imported here and in the fork server: the entries' target
    pool.use_preload("netlab.challenge._preload")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["netlab.challenge._preload"])
    rundir.adopt_multiprocessing_tempdir()
    server = mp_forkserver._forkserver
    server.ensure_running()
    work_root = tempfile.mkdtemp(prefix="entries-", dir=rundir.driver_dir())
    reply = os.fdopen(reply_fd, "w")
    try:
        reply.write(json.dumps({"ready": True}) + "\n")
        reply.flush()
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            got = judge_one(ctx, server, request["spec"], float(request["time_limit_s"]), work_root=work_root)
            reply.write(json.dumps(got) + "\n")
            reply.flush()
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
        rundir.remove_now()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
