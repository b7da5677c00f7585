"""Why a rank process died: its exit code or signal, and whether the OOM killer did it.

The kernel log (dmesg) says who the OOM killer chose, but it is not readable without privileges
(and never on Binder). What a process can always read is its memory cgroup's OOM-kill counter:
``oom_kill`` in ``memory.events`` (cgroup v2) or ``memory.oom_control`` (cgroup v1). The kernel
counts every OOM kill there -- a cgroup's limit or the machine running out -- in the victim's
cgroup. So: remember each rank's cgroup and its counter while the rank is alive; when a rank dies
by SIGKILL and the counter of its cgroup went up, say "out of memory?". Where no counter can be
read, a SIGKILL is reported as a SIGKILL, with that caveat, and never guessed to be an OOM kill.
"""
from __future__ import annotations

import os
import signal


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


class OomWatch:
    """OOM-kill counters of the ranks' cgroups, read when the pool starts and before each run."""

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

    def verdict(self, rank: int, pid: int) -> bool | None:
        """True: an OOM kill was counted in the dead rank's cgroup; False: none was; None: cannot tell.

        The cgroup is the one the rank was in when the pool started or the last run began: a dead
        process's /proc entry no longer names it (a zombie shows the root cgroup).
        """
        path = self.files[rank]
        now = oom_kills(path)
        if now is None:
            return None
        return now > (self.baseline.get(path) or 0)


def describe(exitcode: int, oom: bool | None) -> str:
    """'exited with code 3', 'was killed by SIGSEGV (a crash in native code)', ... 'out of memory?'."""
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
