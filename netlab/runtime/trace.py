"""Trace events -> per-rank summaries and Chrome/Perfetto trace JSON.

An event is (rank, kind, peer, bytes, start, end, label) with kind in send/recv/compute/region,
times in seconds of the clock the run used (virtual or wall). Open the JSON written by
``Trace.save`` in https://ui.perfetto.dev or chrome://tracing: one process per rank, with rows for
compute, sends, receives and named regions; a run on a congestion fabric adds a process "fabric"
with counter tracks (queues, drops, ECN marks, pauses, windows, retransmissions, timeouts).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .comm import Event

_ROWS = {"compute": 0, "send": 1, "recv": 2, "region": 3}


def _union(intervals) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@dataclass
class Trace:
    events: list[Event]
    clocks: list[float]          # each rank's clock when its function returned
    virtual: bool
    counters: list = field(default_factory=list)   # a congestion fabric's tracks: {track, unit, t, v}

    @classmethod
    def from_tuples(cls, per_rank_events, clocks, virtual) -> "Trace":
        events = [Event(*t) for rank_events in per_rank_events for t in rank_events]
        return cls(events, list(clocks), virtual)

    @property
    def world_size(self) -> int:
        return len(self.clocks)

    @property
    def makespan(self) -> float:
        """The time the slowest rank finished: a step's time."""
        return max(self.clocks) if self.clocks else 0.0

    def of(self, rank: int, kind: str | None = None, label: str | None = None) -> list[Event]:
        return [e for e in self.events if e.rank == rank and (kind is None or e.kind == kind)
                and (label is None or e.label == label)]

    def summary(self) -> list[dict]:
        """Per rank: total, compute, communication (ports busy), idle fraction, bytes and messages."""
        rows = []
        for r in range(self.world_size):
            total = self.clocks[r]
            compute = sum(e.end - e.start for e in self.of(r, "compute"))
            comm = _union((e.start, e.end) for e in self.events if e.rank == r and e.kind in ("send", "recv"))
            rows.append({
                "rank": r, "total_s": total, "compute_s": compute, "comm_s": comm,
                "idle_frac": 1.0 - compute / total if total > 0 else 0.0,
                "bytes_sent": sum(e.bytes for e in self.of(r, "send")),
                "bytes_recv": sum(e.bytes for e in self.of(r, "recv")),
                "messages_sent": len(self.of(r, "send")),
            })
        return rows

    def message_pattern(self) -> list[tuple[int, int, int]]:
        """Sorted (src, dst, bytes) of every message: what the algorithm sent, independent of time."""
        return sorted((e.rank, e.peer, e.bytes) for e in self.events if e.kind == "send")

    def to_chrome(self) -> dict:
        """Chrome trace-event JSON (also read by Perfetto); ts/dur in microseconds."""
        out = []
        for r in range(self.world_size):
            out.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
            for kind, tid in _ROWS.items():
                out.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": kind}})
        for e in self.events:
            name = e.label or e.kind
            if e.kind in ("send", "recv"):
                name = f"{e.kind} {'->' if e.kind == 'send' else '<-'} {e.peer}"
            out.append({"ph": "X", "name": name, "cat": e.kind, "pid": e.rank, "tid": _ROWS[e.kind],
                        "ts": e.start * 1e6, "dur": (e.end - e.start) * 1e6,
                        "args": {"peer": e.peer, "bytes": e.bytes, "label": e.label}})
        if self.counters:                    # one more process: the fabric's queues, drops, windows
            pid = self.world_size
            out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "fabric"}})
            for c in self.counters:
                out.extend({"ph": "C", "name": c["track"], "pid": pid, "ts": t * 1e6, "args": {c["unit"]: v}}
                           for t, v in zip(c["t"], c["v"]))
        clock = "virtual" if self.virtual else "wall"
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "otherData": {"clock": clock, "world_size": self.world_size, "clocks": list(self.clocks)}}

    def save(self, path: str) -> str:
        with open(path, "w") as f:
            json.dump(self.to_chrome(), f)
        return path
