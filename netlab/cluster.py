"""``netlab.cluster``: the rank pool's public names, under the name the labs use.

    netlab.cluster.get_cluster(4).pids      # start the shared pool; its ranks are real processes

Names only: everything here lives in ``netlab.runtime`` (``pool``, ``shared``, ``launch``,
``errors``), and ``memory_limit``/``rank_bytes`` in ``netlab.memory``. The pool's state (the
shared pool, its idle timer) is in ``netlab.runtime.shared``, not here. ``check_memory`` is
``netlab.memory``'s, told which ranks are the shared pool's: that module sits below the runtime.
"""
from . import memory as _memory
from .memory import LIGHT_RANK_BASE, memory_limit, rank_bytes
from .runtime.errors import Interrupted, RankDied, RankError, RankTimeout
from .runtime.launch import run, under_torchrun, where_torch_is
from .runtime.pool import DEFAULT_TIMEOUT, MAX_RANKS, Cluster, check_ranks
from .runtime.result import RunResult
from .runtime import shared as _shared
from .runtime.shared import get_cluster, set_idle_timeout, shutdown

__all__ = ["run", "where_torch_is", "get_cluster", "shutdown", "set_idle_timeout", "under_torchrun", "check_ranks", "MAX_RANKS",
           "DEFAULT_TIMEOUT", "Cluster", "RankError", "RankDied", "RankTimeout", "Interrupted", "RunResult",
           "check_memory", "memory_limit", "rank_bytes", "LIGHT_RANK_BASE"]


def check_memory(ranks: int, per_rank_bytes: float, what: str = "this run", root: str = "/",
                 held: list[int] | None = None) -> None:
    """``netlab.memory.check_memory`` with `held` defaulting to the shared pool's ranks, which a run
    reuses or replaces (so the memory they hold counts as free for it)."""
    if held is None:
        pool = _shared._default
        held = list(pool.pids) if pool is not None and pool.alive else []
    _memory.check_memory(ranks, per_rank_bytes, what, root, held)
