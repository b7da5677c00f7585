"""Consistency models of a parameter server: BSP, asynchronous (ASP) and bounded staleness (SSP).

Every worker keeps a clock: the number of steps it has pushed. After pushing step t it asks for
fresh parameters before computing step t+1.

* BSP (bulk synchronous): the server sums all workers' pushes of step t, updates once, and answers
  everyone; the slowest worker sets the pace; no update is ever stale.
* ASP (asynchronous; ps-lite's default, BytePS ``BYTEPS_ENABLE_ASYNC``): the server applies each
  push on arrival and answers at once; nobody waits, but a gradient may have been computed on
  parameters many updates old.
* SSP (stale synchronous parallel, Ho et al., NIPS 2013; ps-lite's "bounded delay"): pushes are
  applied on arrival, but a worker that finished step t may start step t+1 only once every worker
  has finished step t - s (s = the staleness bound): it never runs more than s steps ahead of the
  slowest. s = 0 is BSP's pace with per-push updates; s = infinity is ASP.

Staleness of an update = how many updates the server applied between the worker's read of the
parameters and this push (0 under BSP, about p - 1 under ASP with p equal workers).
"""
from __future__ import annotations

import math
from collections import Counter

from .. import validate

MODES = ("bsp", "async", "ssp")
ALIASES = {"sync": "bsp", "asp": "async", "asynchronous": "async", "bounded": "ssp"}


def check_mode(mode: str, staleness) -> tuple[str, float]:
    """Canonical (mode, staleness bound): BSP is bound 0, async is bound infinity."""
    mode = ALIASES.get(mode, mode)
    validate.choice(mode, "mode", MODES)
    if mode == "bsp":
        return mode, 0
    if mode == "async":
        return mode, math.inf
    return mode, validate.whole(staleness, "staleness", 0, int_only=True)         # steps ahead of the slowest


def ssp_ready(step: int, clocks: list, staleness: float) -> bool:
    """May a worker that has just pushed step `step` (0-based) start step + 1?

    clocks: for every live worker, how many steps it has pushed (finished workers are left out).
    SSP: yes once every clock is at least step + 1 - staleness, i.e. the slowest worker has
    finished step - staleness. With staleness 0 that is "everyone has pushed step `step`".
    """
    return not clocks or min(clocks) >= step + 1 - staleness


def histogram(values) -> dict:
    """{value: count}, sorted by value: a staleness histogram."""
    return dict(sorted(Counter(int(v) for v in values).items()))
