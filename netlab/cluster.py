"""``netlab.cluster``: the rank pool's public names, under the name the labs use.

    netlab.cluster.get_cluster(4).pids      # start the shared pool; its ranks are real processes

Names only: everything here lives in ``netlab.runtime`` (``pool``, ``shared``, ``launch``,
``errors``), and ``check_memory``/``memory_limit`` in ``netlab.memory``. The pool's state (the
shared pool, its idle timer) is in ``netlab.runtime.shared``, not here.
"""
from .memory import LIGHT_RANK_BASE, check_memory, memory_limit, rank_bytes
from .runtime.errors import Interrupted, RankDied, RankError, RankTimeout
from .runtime.launch import run, under_torchrun, where_torch_is
from .runtime.pool import DEFAULT_TIMEOUT, MAX_RANKS, Cluster, check_ranks
from .runtime.result import RunResult
from .runtime.shared import get_cluster, set_idle_timeout, shutdown

__all__ = ["run", "where_torch_is", "get_cluster", "shutdown", "set_idle_timeout", "under_torchrun", "check_ranks", "MAX_RANKS",
           "DEFAULT_TIMEOUT", "Cluster", "RankError", "RankDied", "RankTimeout", "Interrupted", "RunResult",
           "check_memory", "memory_limit", "rank_bytes", "LIGHT_RANK_BASE"]
