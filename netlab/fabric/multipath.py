"""Which path each packet of a flow takes: per-flow ECMP, oblivious spraying, and REPS's recycled entropies.

A flow between two hosts of a multi-path fabric (``multiswitch.py``: a spine-leaf or fat-tree of
``netlab.net``, or several planes) has k shortest paths. A packet's *entropy* (UET's entropy value,
the field a switch hashes with the addresses) decides its path; here an entropy is simply a path's
index, 0..k-1, as in UEC's htsim (a real switch hashes the entropy at every hop, so two entropies
can share a path: left out). A chooser is attached to a flow (``Flow.multipath``); the sender asks
it for every packet it transmits (``pick``) and tells it what came back (``acked`` with the ECN echo,
``nacked`` for a trimmed packet, ``timeout``).

* ``ECMP`` (per-flow hashing, RFC 2992): every packet of a flow takes one path, the one chapter 5's
  flow simulator gives the pair (``net.routing``: each switch hashes source, destination and a seed).
  Two large flows can hash onto one link while another idles. After a link fails, the flow keeps
  hashing onto it until routing converges (``reroute``: the failure's reroute delay), then hashes
  over the paths left.
* ``Spray`` (oblivious per-packet spraying): packet i takes path (offset + i) mod k, so each of k
  equal paths carries exactly 1/k of the flow's packets, whatever their load; it keeps spraying onto
  a failed link until routing converges. UET's oblivious mode draws entropies at random, which adds
  per-packet imbalance (left out: round robin is the same on average and countable by hand).
* ``REPS`` (Bonato et al., "REPS: Recycling Entropies for Packet Spraying", arXiv 2407.21625, as in
  UEC's htsim ``UecMpReps``): a circular buffer of 8 entropies. An ACK that comes back without an
  ECN mark puts its packet's entropy into the buffer; a packet takes the oldest recycled entropy
  (removing it), or, when none is left, a random one (exploration). Marked, trimmed or lost packets'
  entropies are not recycled, so congested paths are used less and a failed path, whose packets
  never come back, drops out within a few round trips. On a loss that no NACK explains (with
  trimming on, congestion never loses a packet silently) the buffer freezes (htsim's freezing
  mode): no more exploration, the recycled entropies are reused in turn, for ``freeze_s``. State
  per connection: 8 two-byte entropies, four one-byte indexes and a deadline, 24 bytes.

Every chooser counts the packets it sent on each path (``sent``), for the per-path load. A NIC knows
when its own link is down, so no chooser sends a packet onto a path whose first link has failed
(the failure of a switch-to-switch link is only learnt end to end, or from routing).
"""
from __future__ import annotations

import random

from .. import validate
from .switch import NIC_QUEUE

SCHEMES = ("ecmp", "spray", "reps")
REPS_BUFFER = 8                      # entropies (htsim's repsBufferSize)
FREEZE_S = 10e-3                     # s a frozen REPS buffer stays frozen (htsim: exit_freeze_after, 10 ms)


class Chooser:
    """A flow's paths (each a list of Ports) and the per-path packet counts; subclasses choose."""
    listens = False                  # True: wants acked/nacked/timeout feedback

    def __init__(self, paths: list, fabric, seed: int = 0):
        if not paths:
            raise ValueError("multipath: a flow needs at least one path")
        self.paths, self.fabric = paths, fabric
        self.k = len(paths)
        self.alive = list(range(self.k))        # what routing lets this flow use (all, until a reroute)
        self.sent = [0] * self.k                # packets sent on each path
        self.last_at = [-1.0] * self.k          # when the last of them was sent
        self.rng = random.Random(seed)
        self.ev_of: dict[int, int] = {}          # packet -> entropy of its latest transmission

    def pick(self, pkt) -> None:
        ev = self.choose()
        if self.paths[ev][0].failed:             # the NIC sees its own link down: a path with a live one
            usable = self.usable()
            if usable:
                ev = usable[self.rng.randrange(len(usable))]
        pkt.ev, pkt.path = ev, self.paths[ev]
        self.sent[ev] += 1
        self.last_at[ev] = self.fabric.now
        if self.listens:
            self.ev_of[pkt.seq] = ev

    def usable(self) -> list[int]:
        """The paths routing allows whose first link (the host's own) is up."""
        return [ev for ev in self.alive if not self.paths[ev][0].failed]

    def choose(self) -> int:
        raise NotImplementedError

    def acked(self, seq: int, ce: bool) -> None:
        pass

    def nacked(self, seq: int) -> None:
        pass

    def timeout(self) -> None:
        pass

    def reroute(self, dead: set) -> None:
        """Routing has converged around the failed ports `dead`: paths through them are withdrawn."""
        alive = [i for i in range(self.k) if not any(p in dead for p in self.paths[i])]
        self.alive = alive or self.alive


class ECMP(Chooser):
    """One path per flow: ``first`` (chapter 5's hashed path) until a reroute, then a hash over the rest."""

    def __init__(self, paths, fabric, seed: int = 0, first: int = 0, *, key: int = 0):
        super().__init__(paths, fabric, seed)
        self.ev, self.key = first, key

    def choose(self) -> int:
        return self.ev

    def reroute(self, dead: set) -> None:
        super().reroute(dead)
        if self.ev not in self.alive:
            self.ev = self.alive[self.key % len(self.alive)]


class Spray(Chooser):
    """Round robin over the paths routing allows, from a per-flow offset."""

    def __init__(self, paths, fabric, seed: int = 0):
        super().__init__(paths, fabric, seed)
        self.i = self.rng.randrange(self.k)

    def choose(self) -> int:
        alive = self.alive
        self.i += 1
        ev = alive[self.i % len(alive)]
        if self.paths[ev][0].failed:             # rotate over the paths this host can still send on
            usable = self.usable() or alive
            ev = usable[self.i % len(usable)]
        return ev


class REPS(Chooser):
    """Recycled entropies: reuse what came back clean, explore at random when nothing did.

    The buffer is htsim's ``CircularBufferREPS``: ``size`` slots written in turn at ``head`` (the
    oldest slot is overwritten), each valid until used; a send takes the earliest valid one
    (``fresh`` of them are valid). A NIC with a port per plane takes the earliest one whose port has
    room (fewer than two packets queued; else the earliest), and explores on ports with room, so its
    planes stay evenly busy. Frozen (after a loss no NACK explains, a timeout or the
    out-of-order rule, while trimming is on), the slots are reused in turn, valid or not, and no
    entropy is explored; after ``freeze_s`` the buffer is cleared and the next 16 packets explore."""
    listens = True

    def __init__(self, paths, fabric, seed: int = 0, size: int = REPS_BUFFER, *, freeze_s: float = FREEZE_S,
                 freeze: bool = True):
        super().__init__(paths, fabric, seed)
        self.size = size
        self.values, self.valid = [0] * size, [False] * size
        self.head = self.count = self.fresh = self.head_frozen = 0
        self.freeze, self.freeze_s = freeze, freeze_s
        self.frozen_until = None                 # None: not frozen
        self.explore_counter = 0
        self.explored = self.recycled = self.freezes = 0
        self.planes_nic = len({id(p[0]) for p in paths}) > 1     # first hops differ: several plane NICs

    @property
    def buffer(self) -> list[int]:
        """The valid recycled entropies, oldest first."""
        return [self.values[(self.head - self.fresh + i) % self.size] for i in range(self.fresh)
                if self.valid[(self.head - self.fresh + i) % self.size]]

    def _random(self) -> int:
        self.explored += 1
        alive = self.alive
        if self.planes_nic:                                         # explore on a live plane port with room
            alive = self.usable() or alive
            alive = [ev for ev in alive if self.paths[ev][0].qbytes < NIC_QUEUE] or alive
        return alive[self.rng.randrange(len(alive))]

    def _live(self, ev: int) -> int:
        return ev if ev in self.alive else self.alive[ev % len(self.alive)]   # after a reroute: rehashed

    def choose(self) -> int:
        self._thaw()
        if self.explore_counter > 0:
            self.explore_counter -= 1
            return self._random()
        if self.frozen_until is not None:
            if self.count == 0:
                return self._random()
            i = self.head_frozen
            ev = self.values[i]
            if self.valid[i]:
                self.valid[i] = False
                self.fresh -= 1
            self.head_frozen = (i + 1) % self.count
            self.recycled += 1
            return self._live(ev)
        if self.count == 0 or self.fresh == 0:
            return self._random()
        i = (self.head - self.fresh) % self.size                   # the earliest fresh slot
        if self.planes_nic:                                         # a multi-plane NIC: a port with room
            for j in range(self.fresh):
                at = (self.head - self.fresh + j) % self.size
                if self.valid[at] and self.paths[self._live(self.values[at])][0].qbytes < NIC_QUEUE:
                    i = at
                    break
        self.valid[i] = False
        self.fresh -= 1
        self.recycled += 1
        return self._live(self.values[i])

    def _add(self, ev: int) -> None:
        h = self.head
        if not self.valid[h]:
            self.fresh = min(self.fresh + 1, self.size)
        self.values[h], self.valid[h] = ev, True
        self.head = (h + 1) % self.size
        self.count = min(self.count + 1, self.size)

    def _thaw(self) -> None:
        if self.frozen_until is not None and self.fabric.now > self.frozen_until:
            self.frozen_until = None
            self.values, self.valid = [0] * self.size, [False] * self.size
            self.head = self.count = self.fresh = self.head_frozen = 0
            self.explore_counter = 16

    def acked(self, seq: int, ce: bool) -> None:
        ev = self.ev_of.pop(seq, None)
        self._thaw()
        if ev is not None and not ce:
            self._add(ev)

    def nacked(self, seq: int) -> None:
        self.ev_of.pop(seq, None)                # a trimmed packet's entropy is not recycled

    def timeout(self) -> None:
        self._thaw()
        if self.freeze and self.frozen_until is None and self.explore_counter == 0:
            self.frozen_until = self.fabric.now + self.freeze_s
            self.freezes += 1

    def state_bytes(self) -> int:
        """Bytes of state a NIC keeps for this: 8 two-byte entropies, a byte each for head, count,
        fresh and the frozen cursor, and a 4-byte freeze deadline."""
        return 2 * self.size + 4 + 4


def make(scheme: str, paths: list, fabric, seed: int = 0, *, ecmp_first: int = 0, key: int = 0, **options) -> Chooser:
    validate.choice(scheme, "multipath", SCHEMES)
    if scheme == "ecmp":
        return ECMP(paths, fabric, seed, first=ecmp_first, key=key)
    if scheme == "spray":
        return Spray(paths, fabric, seed)
    if scheme == "reps":
        return REPS(paths, fabric, seed, **options)
    raise AssertionError(f"multipath: {scheme!r} is in SCHEMES but has no chooser")
