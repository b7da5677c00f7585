"""One parameter-server training run, as every rank sees it: layout, shard map, consistency, model.

Built once in the launching process (``experiment.run_ps`` checks every value and names the bad
one) and shipped to the ranks; the ranks only read it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .consistency import ssp_ready
from .roles import Membership, Roles
from .sharding import ShardMap


@dataclass(frozen=True)
class PSConfig:
    roles: Roles
    smap: ShardMap
    membership: Membership
    mode: str = "bsp"                   # "bsp" | "async" | "ssp"
    staleness: float = 0            # SSP bound s (0 for BSP, inf for async)
    lr: float = 0.2
    momentum: float = 0.0               # heavy-ball momentum, applied by the servers (0: plain SGD)
    width: int = 128
    layers: int = 2
    batch: int = 32                     # samples per worker per step
    seed: int = 0
    stragglers: int = 0                 # how many workers are slow in a step
    slowdown: float = 1.0               # ... by this factor on their compute time
    straggle: str = "random"            # "random": a new random set each step; "fixed": the last workers, always
    eval_every: int = 10                # worker 0 evaluates every this many of its steps (0: never)
    start: int = 0                      # first step of this run (> 0 when resuming from saved server state)
    restore: tuple | None = None        # per server: a saved ``ServerState`` to start from
    ready: object = field(default=ssp_ready, compare=False)   # the SSP wait condition (an exercise)

    def slow(self, worker: int, step: int) -> float:
        """Compute-time multiplier of `worker` at its step `step` (deterministic: seeded by the step)."""
        if not self.stragglers or self.slowdown == 1.0:
            return 1.0
        if self.straggle == "fixed":
            slow = worker >= self.roles.workers - self.stragglers
        else:
            rng = random.Random(self.seed * 1_000_003 + step)
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
