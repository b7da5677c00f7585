"""What a run's coordinator knows between two answers: each message as reported (``Messages``) and a bound
on each rank's clock (``Clocks``), from which it knows how far the fabric may run (``live.py``'s docstring:
conservative, every event earlier than the earliest time any rank may still send).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Message:
    start: float                 # the sender's clock when it posted the send
    nbytes: int
    begin: float | None = None   # the port model: when the sender's port took it
    end: float | None = None     # when it was complete (ports: the sender's port; fabric: delivered)


class Messages:
    """The bookkeeping of one epoch's messages: each send as reported, keyed (src, dst, seq), and the
    sends a fabric has yet to inject."""

    def __init__(self):
        self.by_key: dict[tuple, Message] = {}     # (src, dst, seq) -> message
        self.pending: list[tuple] = []               # packet mode: (start, src, dst, seq) not yet injected

    def get(self, key: tuple) -> Message | None:
        return self.by_key.get(key)

    def __getitem__(self, key: tuple) -> Message:
        return self.by_key[key]

    def add(self, key: tuple, start: float, nbytes: int) -> Message:
        msg = self.by_key[key] = Message(start, nbytes)
        return msg

    def next_start(self) -> float:
        """The earliest start of a send not yet injected (inf: none)."""
        return min((p[0] for p in self.pending), default=math.inf)

    def take(self, start: float) -> list[tuple]:
        """The pending sends that start at `start`, in the canonical order (start, src, dst, seq)."""
        now = sorted(p for p in self.pending if p[0] == start)
        self.pending = [p for p in self.pending if p[0] != start]
        return now

    def first(self, keys: list):
        """(end, key) of the earliest-completed of these messages (ties: lower sender, then seq); None if none is."""
        done = [(m.end, key) for key in keys if (m := self.by_key.get(key)) is not None and m.end is not None]
        return min(done, default=None)


class Clocks:
    """What the coordinator knows of each rank's clock, to keep the fabric conservative: a lower bound on
    its next send, whether it runs, waits or waits outside ``comm.wait`` for data, and what it waits for."""

    def __init__(self, ranks: int):
        n = self.ranks = ranks
        self.lb = [0.0] * n                          # a lower bound on each running rank's next send time
        self.state = ["run"] * n                     # run | blocked | data | done
        self.waiting: list = [None] * n              # (kind, key) a blocked rank waits for; ("any", [keys])
        self.data: list = [None] * n                 # (src, dst, seq) a rank blocked on data waits for, unsent
        self.promise = [0.0] * n                     # no send earlier than this: data it has already seen

    def all_done(self) -> bool:
        return all(s == "done" for s in self.state)

    def reached(self, rank: int, clock: float) -> None:
        """`rank` reported its clock: it sends nothing earlier."""
        self.lb[rank] = max(self.lb[rank], clock)

    def done(self, rank: int) -> None:
        self.state[rank], self.lb[rank] = "done", math.inf

    def hold(self, rank: int) -> None:
        """`rank` restarted ahead of the others: it sends nothing until they restart."""
        self.state[rank], self.lb[rank] = "blocked", math.inf

    def block(self, rank: int, waiting: tuple) -> None:
        self.state[rank], self.waiting[rank] = "blocked", waiting

    def block_on_data(self, rank: int, key: tuple) -> None:
        self.state[rank], self.data[rank] = "data", key

    def release(self, rank: int, at: float) -> None:
        """`rank` was answered: it runs again from `at`."""
        self.waiting[rank], self.state[rank] = None, "run"
        self.lb[rank] = max(self.lb[rank], at)

    def seen(self, rank: int, start: float) -> None:
        """`rank` has (or is about to have) data sent at `start`: it may send again, but not earlier."""
        self.promise[rank] = max(self.promise[rank], start)
        self.lb[rank] = max(self.lb[rank], start)
        if self.state[rank] == "data":
            self.state[rank], self.data[rank] = "run", None

    def bound(self) -> float:
        """The earliest virtual time at which any rank may still send.

        A running rank: its last reported clock. A rank blocked on data not yet sent: it will not send
        before that data's start, which is no earlier than its sender's own bound (a rank blocked in
        ``comm.wait`` has none until its message completes). A cycle of ranks blocked on data: none."""
        memo: dict[int, float] = {}

        def of(r: int, seen: frozenset) -> float:
            if r in memo:
                return memo[r]
            s = self.state[r]
            if s == "run":
                b = self.lb[r]
            elif s == "data" and r not in seen:
                b = max(self.lb[r], of(self.data[r][0], seen | {r}))
            else:
                b = math.inf
            memo[r] = b
            return b
        return min((of(r, frozenset()) for r in range(self.ranks)), default=math.inf)

    def horizon(self, messages: Messages) -> float:
        """Just past the earliest completion a rank waiting for the first of several messages could be told:
        the fabric must not run beyond it (that rank will send at that time), only finish its ties."""
        ends = [first[0] for what, keys in filter(None, self.waiting) if what == "any"
                and (first := messages.first(keys)) is not None]
        return math.nextafter(min(ends), math.inf) if ends else math.inf
