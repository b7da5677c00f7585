"""Why a rank process died: its exit code or signal, and whether the OOM killer did it.

The kernel log (dmesg) says who the OOM killer chose, but it is not readable without privileges
(and never on Binder). What a process can always read is its memory cgroup's OOM-kill counter:
``oom_kill`` in ``memory.events`` (cgroup v2) or ``memory.oom_control`` (cgroup v1). The kernel
counts every OOM kill there -- a cgroup's limit or the machine running out -- in the victim's
cgroup. So: remember each rank's cgroup and its counter while the rank is alive; when a rank dies
by SIGKILL and the counter of its cgroup went up, say "out of memory?". Where no counter can be
read, a SIGKILL is reported as a SIGKILL, with that caveat, and never guessed to be an OOM kill.

The fork server that starts the ranks can die too (the OOM killer picks it as readily as a rank).
Its ranks keep running, but multiprocessing learns a rank's exit status from the fork server, so
from then on every rank looks dead ("exit code 255") and a pool that starts gets a bare EOFError.
``forkserver_exit`` tells that case apart: the fork server is this process's child, so its own exit
status can be read (and multiprocessing made to start a fresh one next time).
"""
from __future__ import annotations

import os
import signal
import sys
import time


def memory_cgroup(pid: int) -> str | None:
    """The file holding the OOM-kill counter of `pid`'s memory cgroup, or None where there is none."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:                                  # v1: "4:memory:/path", v2: "0::/path"
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidate = f"/sys/fs/cgroup/memory{path.rstrip('/')}/memory.oom_control"
            if os.path.exists(candidate):
                return candidate
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidate = f"/sys/fs/cgroup{path.rstrip('/')}/memory.events"
            if os.path.exists(candidate):
                return candidate
    return None


def oom_kills(counter_file: str | None) -> int | None:
    """The cgroup's OOM-kill count so far (None if it cannot be read)."""
    if counter_file is None:
        return None
    try:
        with open(counter_file) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (with its pid, unique), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in (b"Z", b"X") else fields[19].decode()


def running(pid: int, started: str | None) -> bool:
    """Whether `pid` is still the process that started at `started` (and not a zombie)."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


UNKNOWN_EXIT = 256          # a process seen gone whose exit status nobody can read any more

# The fork servers seen dead, by pid: their exit code (negative: the signal). Every pool that the
# fork server started looks its fate up here, whichever of them noticed first.
_forkserver_deaths: dict[int, int] = {}


def forkserver_pid() -> int | None:
    """The pid of this process's multiprocessing fork server, None if none was started."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


def forkserver_exit(pid: int | None, wait: float = 0.0) -> int | None:
    """The exit code of fork server `pid` (negative: the signal) if it has died, else None.

    Waits up to `wait` seconds for it to be seen dead: its sockets close as it exits, a moment before
    it can be reaped. A dead one is reaped and forgotten, as ``ForkServer.ensure_running`` would
    forget it, so that the next pool starts a fresh fork server.
    """
    if pid is None:
        return None
    deadline = time.monotonic() + wait
    while pid not in _forkserver_deaths:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:                       # reaped elsewhere (multiprocessing restarted it)
            return _forkserver_deaths.get(pid, UNKNOWN_EXIT if start_time(pid) is None else None)
        if got:
            _forkserver_deaths[pid] = os.waitstatus_to_exitcode(status)
            _forget_forkserver(pid)
            break
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
    return _forkserver_deaths[pid]


def _forget_forkserver(pid: int) -> None:
    from multiprocessing import forkserver
    server = forkserver._forkserver
    if not server._lock.acquire(timeout=5):
        return
    try:
        if server._forkserver_pid != pid:
            return
        try:
            os.close(server._forkserver_alive_fd)
        except (OSError, TypeError):
            pass
        address = server._forkserver_address
        server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
        if isinstance(address, str) and not address.startswith("\0"):
            try:
                os.unlink(address)
            except OSError:
                pass
    finally:
        server._lock.release()


class OomWatch:
    """OOM-kill counters of the ranks' (and the fork server's) cgroups, read when the pool starts and
    before each run."""

    def __init__(self, pids: list[int]):
        self.pids = pids
        self.files: list[str | None] = []
        self.baseline: dict[str, int | None] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-read where each rank lives (it may have been moved) and each cgroup's count so far."""
        self.files = [memory_cgroup(pid) for pid in self.pids]
        for path in set(self.files):
            if path is not None:
                self.baseline[path] = oom_kills(path)

    def verdict(self, rank: int, pid: int | None = None) -> bool | None:
        """True: an OOM kill was counted in the dead rank's cgroup; False: none was; None: cannot tell.

        The cgroup is the one the rank was in when the pool started or the last run began: a dead
        process's /proc entry no longer names it (a zombie shows the root cgroup). `rank` indexes
        the pids the watch was given (the fork server's comes after the ranks').
        """
        path = self.files[rank]
        now = oom_kills(path)
        if now is None:
            return None
        return now > (self.baseline.get(path) or 0)


def describe(exitcode: int, oom: bool | None) -> str:
    """'exited with code 3', 'was killed by SIGSEGV (a crash in native code)', ... 'out of memory?'."""
    if exitcode == UNKNOWN_EXIT:
        return "ended (how cannot be read any more)" + (": out of memory? (its cgroup's OOM-kill count went up)"
                                                         if oom else "")
    if exitcode >= 0:
        return f"exited with code {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    text = f"was killed by {name}"
    if -exitcode == signal.SIGKILL:
        if oom:
            text += ": out of memory? (its cgroup's OOM-kill count went up: the kernel's OOM killer ended it)"
        elif oom is None:
            text += " (from kill -9, or the OOM killer: this machine's OOM-kill count cannot be read)"
    elif -exitcode in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
        text += " (a crash in native code)"
    return text
