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
    """A rank process died (exit, signal, segfault, OOM kill) instead of answering."""

    def __init__(self, rank: int, exitcode: int, oom: bool | None = None):
        self.exitcode = exitcode                       # negative: the signal's number, as Process.exitcode
        self.oom = oom                                 # True: its cgroup counted an OOM kill
        how = death.describe(exitcode, oom)
        self.rank, self.exc_type, self.remote_message, self.remote_traceback = rank, "RankDied", how, ""
        RuntimeError.__init__(self, f"rank {rank} died: it {how}")


class RankTimeout(TimeoutError):
    """A run did not finish in time (a deadlock, or too much work for the timeout)."""


class Interrupted(KeyboardInterrupt):
    """The caller interrupted a run; the ranks were stopped."""
