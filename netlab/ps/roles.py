"""Who is who on the real ranks: workers, servers, and the colocated layout where every rank is both.

Non-colocated (ps-lite's and BytePS's usual deployment): ranks 0..p-1 are workers, ranks p..p+k-1
are servers, each with its own NIC. Colocated (BytePS issue #60, "equivalent to allreduce"): p
ranks, rank r is worker r and server r, so the servers' traffic shares the workers' NICs.
Hybrid (BytePS): p workers that are also colocated summation servers, plus k CPU-only servers on
ranks p..p+k-1.

Membership for elastic training: ``Membership`` says which workers take part in each step. Spare
worker ranks (``spare``) sit idle until their step of joining. ps-lite's scheduler node, which
tracks liveness, is left out: membership is part of the run's configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import validate
from ..runtime.pool import MAX_RANKS


def _whole(value, name: str, low: int) -> int:
    return validate.whole(value, name, low, int_only=True)


@dataclass(frozen=True)
class Roles:
    workers: int               # worker slots (initial workers plus spares that may join)
    servers: int               # parameter servers (k); equals `workers` when colocated
    colocated: bool = False

    def __post_init__(self):
        _whole(self.workers, "workers", 1)
        _whole(self.servers, "servers", 1)
        if self.colocated and self.servers != self.workers:
            raise ValueError(f"servers: a colocated layout has one server per worker ({self.workers}), "
                             f"got {self.servers}")
        if self.world_size > MAX_RANKS:
            raise ValueError(f"workers: {self.workers} workers + {self.servers} servers need {self.world_size} ranks; "
                             f"at most {MAX_RANKS} fit (workers + servers <= {MAX_RANKS})")

    @classmethod
    def of(cls, workers: int, servers: int, colocated: bool = False) -> "Roles":
        _whole(workers, "workers", 1)
        return cls(workers, workers if colocated else servers, colocated)

    @property
    def world_size(self) -> int:
        return self.workers if self.colocated else self.workers + self.servers

    def worker_rank(self, w: int) -> int:
        return w

    def server_rank(self, s: int) -> int:
        return s if self.colocated else self.workers + s

    def role(self, rank: int) -> str:
        if self.colocated:
            return "both"
        return "worker" if rank < self.workers else "server"

    def server_ranks(self) -> list[int]:
        return [self.server_rank(s) for s in range(self.servers)]


@dataclass(frozen=True)
class Membership:
    """Which workers compute each step: all `workers` from step 0, minus leavers, plus joiners.

    leave: {worker: last step it computes}; join: {worker: first step it computes}. A joiner pulls
    the current parameters from the servers before its first step.
    """
    workers: int
    steps: int
    leave: dict = field(default_factory=dict)
    join: dict = field(default_factory=dict)

    def __post_init__(self):
        _whole(self.steps, "steps", 1)
        for name, table in (("leave", self.leave), ("join", self.join)):
            for w, step in table.items():
                if not isinstance(w, int) or not 0 <= w < self.workers:
                    raise ValueError(f"{name}: worker {w!r} is not one of 0..{self.workers - 1}")
                if not isinstance(step, int) or not 0 <= step < self.steps:
                    raise ValueError(f"{name}: step {step!r} for worker {w} is not one of 0..{self.steps - 1}")
        for w in self.join:
            if w in self.leave and self.leave[w] < self.join[w]:
                raise ValueError(f"leave: worker {w} would leave at step {self.leave[w]} before joining at {self.join[w]}")
        if not all(self.members(t) for t in range(self.steps)):
            raise ValueError("leave: every step needs at least one worker")

    def first(self, w: int) -> int:
        return self.join.get(w, 0)

    def last(self, w: int) -> int:
        return self.leave.get(w, self.steps - 1)

    def steps_of(self, w: int) -> range:
        return range(self.first(w), self.last(w) + 1)

    def members(self, step: int) -> list[int]:
        return [w for w in range(self.workers) if self.first(w) <= step <= self.last(w)]

    def recipients(self, step: int) -> list[int]:
        """Who receives the parameters after `step`: next step's members (the final model: the last step's)."""
        return self.members(step + 1) if step + 1 < self.steps else self.members(step)
