"""The configuration a parameter-server run's ranks receive: layout, shard map, consistency, model.

``Training`` holds what every chapter-3 run shares (the MLP, batch, SGD, seed, evaluation);
``PSConfig`` adds the parameter-server layout and ``hybrid.HybridConfig`` the summation service's.
Both are keyword-only, frozen, and check their own values when built (one ValueError naming the
parameter), so a bad value fails in the launching process, never on a rank. ``experiment.make_config``
builds a PSConfig from a run's settings (worker and server counts, sharding, steps); the ranks only
read it. Left out: the network and the device, which the launchers take beside the config.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from .. import seeds, validate
from ..dataparallel import train
from ..runtime import pool
from .consistency import MODES, check_mode, ssp_ready
from .roles import Membership, Roles
from .sharding import ShardMap

STRAGGLE = ("random", "fixed")     # a new random set of slow workers each step; the last workers, always


def _set(cfg, name: str, value) -> None:
    object.__setattr__(cfg, name, value)             # a frozen dataclass normalizing its own field


@dataclass(frozen=True, kw_only=True)
class Training:
    """Chapter 1's MLP trained by SGD: what a PS run, the all-reduce baseline and BytePS share."""
    width: int = 128
    layers: int = 2
    batch: int = 32                     # samples per worker per step
    lr: float = 0.2
    momentum: float = 0.0               # heavy-ball momentum (0: plain SGD)
    seed: int = 0
    eval_every: int = 10                # worker 0 evaluates every this many of its steps (0: never)

    def __post_init__(self):
        train.check_model(self.width, self.layers)
        validate.whole(self.batch, "batch", 1, 4096)
        _set(self, "lr", validate.positive(self.lr, "lr", 100.0))
        _set(self, "momentum", validate.number(self.momentum, "momentum", 0.0, 0.999))
        validate.whole(self.eval_every, "eval_every", 0, 100_000)
        validate.seed(self.seed)


def training_of(settings: dict) -> Training:
    """The ``Training`` part of a run's settings, checked: its model size is needed to build the shard map."""
    names = {f.name for f in fields(Training)}
    return Training(**{k: v for k, v in settings.items() if k in names})


@dataclass(frozen=True, kw_only=True)
class Layout:
    """A PS run's shape: how many workers and servers, how the model is sharded, the consistency, the steps.

    ``experiment.make_config`` builds the ``PSConfig`` from this and a ``Training``; `membership`
    (workers that join or leave) defaults to every worker for every step.
    """
    workers: int = 4
    servers: int = 1
    sharding: str = "range"
    mode: str = "bsp"
    staleness: float = 2
    steps: int = 50
    partition_bytes: int | None = None      # 0: one message per server, range sharding only
    membership: Membership | None = None

    def __post_init__(self):
        validate.whole(self.servers, "servers", 1, pool.MAX_RANKS)
        Roles.of(self.workers, self.servers)
        _set(self, "mode", check_mode(self.mode, self.staleness)[0])
        _set(self, "steps", validate.whole(self.steps, "steps", 1, 100_000))
        validate.whole(self.staleness, "staleness", 0, 100_000)
        if self.partition_bytes is not None:
            validate.whole(self.partition_bytes, "partition_bytes", 0 if self.sharding == "range" else 1, 1 << 30)
        membership = self.membership or Membership(self.workers, self.steps)
        if membership.workers != self.workers or membership.steps != self.steps:
            raise ValueError(f"membership: made for {membership.workers} workers and {membership.steps} steps, "
                             f"the run has {self.workers} and {self.steps}")
        if self.mode != "bsp" and membership.join:
            raise ValueError("membership: workers can join between steps only under BSP (mode='bsp')")
        _set(self, "membership", membership)

    @property
    def bound(self) -> float:
        """The staleness bound the ranks use: 0 under BSP, infinity under async."""
        return check_mode(self.mode, self.staleness)[1]


@dataclass(frozen=True, kw_only=True)
class PSConfig(Training):
    roles: Roles
    smap: ShardMap
    membership: Membership
    mode: str = "bsp"                   # "bsp" | "async" | "ssp"
    staleness: float = 0                # SSP bound s (0 for BSP, inf for async)
    stragglers: int = 0                 # how many workers are slow in a step
    slowdown: float = 1.0               # ... by this factor on their compute time
    straggle: str = "random"            # "random": a new random set each step; "fixed": the last workers, always
    start: int = 0                      # first step of this run (> 0 when resuming from saved server state)
    restore: tuple | None = None        # per server: a saved ``ServerState`` to start from
    ready: object = field(default=ssp_ready, compare=False)   # the SSP wait condition (an exercise)

    def __post_init__(self):
        super().__post_init__()
        validate.choice(self.mode, "mode", MODES)
        if not (math.isinf(self.staleness) and self.mode == "async"):
            validate.whole(self.staleness, "staleness", 0, 100_000)
        workers, steps = self.roles.workers, self.membership.steps
        _set(self, "stragglers", validate.whole(self.stragglers, "stragglers", 0, workers))
        _set(self, "slowdown", validate.number(self.slowdown, "slowdown", 1.0, 1000.0))
        validate.choice(self.straggle, "straggle", STRAGGLE)
        _set(self, "start", validate.whole(self.start, "start", 0, steps - 1))
        if self.restore is not None:
            if len(self.restore) != self.roles.servers:
                raise ValueError(f"restore: need one saved state per server ({self.roles.servers}), "
                                 f"got {len(self.restore)}")
            _set(self, "restore", tuple(self.restore))

    def slow(self, worker: int, step: int) -> float:
        """Compute-time multiplier of `worker` at its step `step` (deterministic: seeded by the step)."""
        if not self.stragglers or self.slowdown == 1.0:
            return 1.0
        if self.straggle == "fixed":
            slow = worker >= self.roles.workers - self.stragglers
        else:
            rng = seeds.python_random(self.seed, seeds.STRAGGLERS, step)
            slow = worker in rng.sample(range(self.roles.workers), self.stragglers)
        return self.slowdown if slow else 1.0

    def steps_of(self, worker: int) -> range:
        """The steps a worker computes in this run."""
        steps = self.membership.steps_of(worker)
        return range(max(steps.start, self.start), steps.stop)

    def members(self, step: int) -> list[int]:
        return self.membership.members(step)

    def initial_pull(self, worker: int) -> bool:
        """Does this worker fetch the parameters before its first step (a joiner, or a resumed run)?"""
        steps = self.steps_of(worker)
        return len(steps) > 0 and (steps.start > 0)
