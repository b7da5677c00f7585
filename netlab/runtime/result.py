"""What a run returns, and the one reply format both launchers use (netlab's pool and torchrun).

A rank packs its reply with ``pack``; the launcher turns every rank's reply into a ``RunResult``
with ``assemble``. The pool sends the packed replies over its pipes, torchrun all-gathers them:
the format is the same, so the two give the same result object.

A simulated run returns the other result type, ``net.result.SimResult``; the two share their names
where they mean the same: ``wall_s``, ``time_s``, ``fabric``, ``message_pattern()``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from .trace import Trace


@dataclass
class RunResult:
    values: list
    trace: Trace
    counters: list          # per rank: (bytes_sent, bytes_recv, messages_sent, messages_recv)
    wall_s: float           # how long the run took on this machine
    fabric: dict | None = None   # with congestion=: drops, marks, pauses, timeouts (cosim/live.py)

    def __getitem__(self, rank):
        return self.values[rank]

    @property
    def time_s(self) -> float:
        """The run's time on its ranks' clocks: when the slowest finished (``Trace.makespan``; virtual
        seconds on a modelled network), as a ``SimResult``'s ``time_s`` is a simulated run's."""
        return self.trace.makespan

    def message_pattern(self) -> list[tuple[int, int, int]]:
        """Sorted (src, dst, bytes) of every message (``Trace.message_pattern``), as the flow-level
        simulator's ``SimResult.message_pattern()``."""
        return self.trace.message_pattern()


def pack(comm, value) -> dict:
    """One rank's reply: its function's value, clock, trace events and traffic counters."""
    return {"value": value, "clock": comm.now(), "events": [e.as_tuple() for e in comm.events],
            "counters": (comm.bytes_sent, comm.bytes_recv, comm.messages_sent, comm.messages_recv)}


def assemble(replies: list[dict], virtual: bool, started: float) -> RunResult:
    """Every rank's reply (in rank order) as one result; `started` is the launcher's perf_counter."""
    trace = Trace.from_tuples([r["events"] for r in replies], [r["clock"] for r in replies], virtual=virtual)
    return RunResult([r["value"] for r in replies], trace, [r["counters"] for r in replies],
                     time.perf_counter() - started)
