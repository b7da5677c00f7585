"""What a failed run raises: a rank that raised, a rank that died, a run out of time, an interrupt.

Only the exception types; the pool (``pool.py``) decides when each is raised and what the message
names. Left out: retries (a failed run tears the pool down; the next run starts a fresh one).
"""
from __future__ import annotations

from . import death


class RankError(RuntimeError):
    """A rank raised; the message carries the rank and its traceback."""

    def __init__(self, rank: int, exc_type: str, message: str, tb: str):
        self.rank, self.exc_type, self.remote_message, self.remote_traceback = rank, exc_type, message, tb
        super().__init__(f"rank {rank} raised {exc_type}: {message}\n\n--- traceback on rank {rank} ---\n{tb}")


class RankDied(RankError):
    """A process of the run died (exit, signal, segfault, OOM kill) instead of answering.

    Usually a rank (``rank`` is its number). When the fork server that starts the ranks died,
    ``rank`` is None, ``process`` says "fork server" and ``pid`` is its pid: a run cannot go on
    without it, because the ranks' exit statuses reach the launcher through it. ``note`` adds what
    else is known (which ranks went with it, whether memory grew after the memory check).
    """

    def __init__(self, rank: int | None, exitcode: int, oom: bool | None = None, *, process: str = "rank",
                 pid: int | None = None, note: str = ""):
        self.exitcode = exitcode                       # negative: the signal's number, as Process.exitcode
        self.oom = oom                                 # True: its cgroup counted an OOM kill
        self.process, self.pid, self.note = process, pid, note
        how = death.describe(exitcode, oom)
        if process == "rank":
            text = f"rank {rank} died: it {how}"
        else:
            text = f"the {process}{f' (pid {pid})' if pid else ''} that starts this notebook's ranks died: it {how}"
        text += note
        message = how + note if process == "rank" else text
        self.rank, self.exc_type, self.remote_message, self.remote_traceback = rank, "RankDied", message, ""
        RuntimeError.__init__(self, text)


class RankTimeout(TimeoutError):
    """A run did not finish in time (a deadlock, or too much work for the timeout)."""


class Interrupted(KeyboardInterrupt):
    """The caller interrupted a run; the ranks were stopped."""
