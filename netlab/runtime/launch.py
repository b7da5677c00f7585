"""``netlab.run``: run a function on real ranks, the shared pool's or the ones torchrun started.

``where_torch_is(fn, *args)``: ``fn(*args)`` in this process if it has imported torch (a rank, a
script), else on one rank of the pool, so that a notebook kernel that only drives the ranks never
imports torch (about 140 MB per process) for a small torch computation such as counting FLOPs.

Left out: how the pool works (``pool.py``, ``shared.py``) and how a run under torchrun gathers
its result (``torchrun.py``).
"""
from __future__ import annotations

import os
import sys

from ..net.network import Network
from ..net.presets import Device
from . import shared
from .pool import DEFAULT_TIMEOUT, MAX_RANKS, check_ranks
from .result import RunResult


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


def run(fn, *args, ranks: int | None = None, network: Network | None = None, device: Device | None = None,
        timeout: float = DEFAULT_TIMEOUT, **kwargs) -> RunResult:
    """Run ``fn(comm, *args, **kwargs)`` on `ranks` real gloo ranks (or on torchrun's ranks)."""
    if under_torchrun():
        from .torchrun import run_here
        return run_here(fn, args, kwargs, ranks, network=network, device=device)
    if ranks is None:
        raise ValueError("ranks: how many ranks to run on (1 to %d)" % MAX_RANKS)
    check_ranks(ranks)
    return shared.run_on_pool(fn, args, kwargs, ranks, network=network, device=device, timeout=timeout)


def where_torch_is(fn, *args):
    """``fn(*args)`` here if torch is imported here (or under torchrun), else on one rank of the shared pool.

    `fn` must be a module-level function whose value pickles without torch (plain numbers).
    """
    if "torch" in sys.modules or under_torchrun():
        return fn(*args)
    return run(_call, fn, *args, ranks=1).values[0]


def _call(comm, fn, *args):
    return fn(*args)
