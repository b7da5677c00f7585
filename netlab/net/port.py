"""One direction of one rank's port: the busy intervals of a NIC (or an NVLink port) in virtual time.

A message is placed in the first gap that is at least as long as the message and starts no
earlier than the message may start (first fit with backfilling). Each rank places its own
messages in the order its program posts them, using only virtual times carried by the messages,
so the answer never depends on the wall clock, the machine's load, or which rank ran first.
"""
from __future__ import annotations

import bisect


class PortCalendar:
    """Busy intervals [start, end) kept sorted, disjoint, and merged when they touch."""

    def __init__(self):
        self.starts: list[float] = []
        self.ends: list[float] = []

    def reserve(self, earliest: float, duration: float) -> float:
        """Book the first free interval of `duration` starting at or after `earliest`; return its start."""
        i = bisect.bisect_right(self.ends, earliest)       # intervals before i end at or before `earliest`
        start = earliest
        while i < len(self.starts) and self.starts[i] < start + duration:
            start = max(start, self.ends[i])              # overlaps interval i: try right after it
            i += 1
        self._insert(i, start, start + duration)
        return start

    def _insert(self, i: int, start: float, end: float) -> None:
        # Interval i (if any) starts at or after `end`; interval i-1 (if any) ends at or before `start`.
        if i > 0 and self.ends[i - 1] == start:
            self.ends[i - 1] = end
            if i < len(self.starts) and self.starts[i] == end:   # bridge two intervals
                self.ends[i - 1] = self.ends[i]
                del self.starts[i], self.ends[i]
        elif i < len(self.starts) and self.starts[i] == end:
            self.starts[i] = start
        else:
            self.starts.insert(i, start)
            self.ends.insert(i, end)

