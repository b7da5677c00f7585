"""The flow-level simulator: a collective's steps, as arrays, on thousands of ranks over a topology.

It consumes the same ``Step``s the real ranks execute (``netlab.collectives.schedule``), with
sizes instead of tensors. A step is a set of messages that start together; the next step starts
when the last one ends (bulk-synchronous: on a symmetric schedule this is when every rank would
start it anyway). Inside a step:

* the payloads are fluid flows that share links by max-min fairness (``maxmin.py``); when flows
  finish, the rest are re-solved with the smaller set. Completions within 0.1 % of each other
  are taken as one event (a ring step's flows differ by one element at most), and a solution is
  reused whenever the same set of flows comes back -- every step of a ring is one solve.
* alpha is paid where the real ranks pay it (DESIGN.md, "Time"): each message holds its sender's
  port (its NIC, or its intra-host link) and its receiver's port for its alpha, one message after
  another, so a port that handles k messages in a step adds k*alpha. Message i ends at
  fluid_i + max(sum of alphas at its out-port, sum at its in-port); a message alone therefore
  takes exactly alpha + n/B, and k messages into one port k(alpha + n/B), as on the real ranks.
  alpha is a port's own latency (the NIC preset's end-to-end figure) plus the topology's
  hop_latency for every switch passed.
* a reduction costs gamma seconds per byte received, after the step's messages (as ``execute``).

Left out: ranks that run ahead into their next step while slower ranks finish (the real ranks
allow it; uncontended symmetric schedules do not need it), packets, queues and congestion control.
One consequence, measured: with gamma > 0, a schedule whose receiver takes one message per step
from senders that are already free (naive, a tree on p not a power of two) is slower here than on
the real ranks, whose eager sends let the receiver sum one arrival while the next one lands.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..collectives import cost
from .. import validate
from ..net.result import SimResult
from ..net.routing import MODES, route
from ..net.topology import Topology
from .maxmin import FlowSet

TOL = 1e-3                 # completions closer than this (relative) are one event
PREFER = np.array([0, 3, 1, 2])   # tie-break by link kind (nic, fabric, intra, pcie): ports first


def busiest(load: np.ndarray, kinds: np.ndarray) -> int:
    """Index of the largest load; among (near) ties a NIC port first, then intra, PCIe, fabric."""
    tied = np.flatnonzero(load >= load.max() * (1 - 1e-6))
    return int(tied[np.argmin(PREFER[kinds[tied]])])


@dataclass
class _Signature:
    """What a step's (sender, receiver) pairs imply, computed once and reused by every step with them."""
    src: np.ndarray          # (F,) sending rank
    dst: np.ndarray          # (F,) receiving rank
    flows: FlowSet
    alpha_wait: np.ndarray   # (F,) seconds of alpha the message waits for at its busier port
    line_rate: np.ndarray    # (F,) bytes/s of the slower of its two ports
    bottleneck: int          # link with the most bytes per capacity when all messages are the same size
    slowest: float           # the slowest flow's max-min rate / its line rate, all flows sending
    bytes_sent: np.ndarray   # (F,) bytes moved in the current run, summed over the steps using it
    unit_done: np.ndarray | None = None    # (F,) completion times when every flow moves 1 byte
    done: dict | None = None               # sizes.tobytes() -> completion times, other size mixes


@dataclass(eq=False)
class FlowDetail:
    """What the flow-level simulator observes of a collective's run, beside the ``SimResult`` fields every
    model has (``time_s``, ``step_times``, ``wall_s``, ``topology``; ``net/result.py``). Read through the
    result: ``r.busbw_GBps``, ``r.bottleneck``."""
    collective: str
    algo: str
    ranks: int
    nbytes: int                  # S as nccl-tests counts it
    step_bottleneck: np.ndarray  # (steps,) link id: most bytes per capacity in that step
    step_slowest: np.ndarray     # (steps,) slowest flow's max-min rate / line rate at the step's start
    link_bytes: np.ndarray       # (E,) bytes each link carried
    routing: str = "ecmp"
    placement: str = "ordered"
    messages: tuple | None = None    # (src, dst, bytes) arrays when recorded
    result: SimResult | None = field(default=None, repr=False)   # the run it belongs to (set by SimResult)

    @property
    def algbw_GBps(self) -> float:
        return cost.algbw(self.nbytes, self.result.time_s) / 1e9

    @property
    def busbw_GBps(self) -> float:
        time_s = self.result.time_s
        return cost.busbw(self.collective, self.ranks, self.nbytes, time_s) / 1e9 if time_s > 0 else 0.0

    @property
    def utilization(self) -> np.ndarray:
        """(E,) fraction of the run each link was busy at full rate."""
        r = self.result
        return self.link_bytes / (r.topology.capacity * r.time_s) if r.time_s > 0 else self.link_bytes * 0

    @property
    def bottleneck_link(self) -> int:
        """The most utilized link's id over the whole run (ties: a port before a fabric link)."""
        return busiest(self.utilization, self.result.topology.link_kind)

    @property
    def bottleneck(self) -> str:
        """The most utilized link, by its label (as the packet fabric names its busiest port)."""
        return self.result.topology.link_label(self.bottleneck_link)

    @property
    def bottleneck_label(self) -> str:
        topo = self.result.topology
        return f"{self.bottleneck} ({topo.kind_of(self.bottleneck_link)})"

    @property
    def slowest_flow(self) -> float:
        """The slowest flow's max-min rate as a fraction of its line rate, over all steps."""
        return float(self.step_slowest.min()) if self.step_slowest.size else 1.0

    def time_by_bottleneck_kind(self) -> dict[str, float]:
        """Seconds of steps whose bottleneck is a NIC, a fabric, an intra-host or a PCIe link."""
        r = self.result
        kinds = r.topology.link_kind[self.step_bottleneck] if r.step_times.size else np.zeros(0, np.int8)
        from ..net.topology import KINDS
        return {k: float(r.step_times[kinds == i].sum()) for i, k in enumerate(KINDS)
                if (kinds == i).any()}

    def message_pattern(self) -> list[tuple[int, int, int]]:
        """Sorted (src, dst, bytes) of every message, as ``Trace.message_pattern`` gives for real ranks."""
        if self.messages is None:
            raise ValueError("record: run the simulation with record=True to keep the messages")
        src, dst, nbytes = self.messages
        return sorted(zip(src.tolist(), dst.tolist(), nbytes.tolist()))

    def summary(self) -> dict:
        """The figures the CLI prints (times in s, bandwidths in GB/s with GB = 1e9 B)."""
        r, topo = self.result, self.result.topology
        util, link = self.utilization, self.bottleneck_link
        return {"topology": topo.name, "collective": self.collective, "algo": self.algo,
                "ranks": self.ranks, "bytes": int(self.nbytes), "routing": self.routing, "placement": self.placement,
                "time_s": r.time_s, "algbw_GBps": self.algbw_GBps, "busbw_GBps": self.busbw_GBps,
                "bottleneck": topo.link_label(link),
                "bottleneck_kind": topo.kind_of(link),
                "bottleneck_util": float(util[link]),
                "links_as_busy": int(np.sum(util >= util[link] * (1 - 1e-6))),
                "slowest_flow_rate": self.slowest_flow, "steps": int(r.step_times.size),
                "wall_s": r.wall_s}


class Simulator:
    """`ranks` ranks placed on a topology, with a routing mode; runs any schedule of steps."""

    def __init__(self, topology: Topology, ranks: int | None = None, placement: str = "ordered",
                 routing: str = "ecmp", *, seed: int = 0, gamma: float = 0.0):
        self.topology, self.routing, self.seed = topology, routing, validate.seed(seed)
        self.ranks = topology.size if ranks is None else ranks
        self.placement = placement if isinstance(placement, str) else "custom"
        self.nodes = topology.endpoints[topology.placement(self.ranks, placement, seed)]   # (ranks,) node ids
        self.gamma = validate.number(gamma, "gamma", 0)
        validate.choice(routing, "routing", MODES)
        self._signatures: dict[tuple[bytes, bytes], _Signature] = {}

    def _signature(self, src: np.ndarray, dst: np.ndarray) -> _Signature:
        key = (src.tobytes(), dst.tobytes())
        sig = self._signatures.get(key)
        if sig is None:
            sig = self._signatures[key] = self._build(np.array(src), np.array(dst))
        return sig

    def _build(self, src, dst) -> _Signature:
        t = self.topology
        if (src == dst).any():
            raise ValueError("steps: a message from a rank to itself")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= self.ranks):
            raise ValueError(f"steps: ranks must be 0..{self.ranks - 1}")
        r = route(t, self.nodes[src], self.nodes[dst], self.routing, seed=self.seed)
        F = src.size
        flows = FlowSet(r.flow, r.link, r.weight, t.capacity, n_flows=F)
        alpha = t.latency[r.out_port] + t.hop_latency * r.hops               # (F,) seconds
        at_out = np.bincount(r.out_port, alpha, minlength=t.links)[r.out_port]
        at_in = np.bincount(r.in_port, alpha, minlength=t.links)[r.in_port]
        line = np.minimum(t.capacity[r.out_port], t.capacity[r.in_port])
        per_byte = flows.link_load(np.ones(F)) / flows.cap                  # seconds per byte of each link
        rates = flows.rates(np.ones(F, dtype=bool))
        return _Signature(src=src, dst=dst, flows=flows, alpha_wait=np.maximum(at_out, at_in), line_rate=line,
                          bottleneck=int(flows.links[busiest(per_byte, t.link_kind[flows.links])]) if F else 0,
                          slowest=float((rates / line).min()) if F else 1.0, bytes_sent=np.zeros(F))

    def _fluid(self, sig: _Signature, sizes: np.ndarray) -> np.ndarray:
        """(F,) seconds from the step's start until each payload has arrived (0 for empty messages).

        Times scale with size when every flow's size does, so a step whose messages are all the
        same size (to 0.1 %) reuses its pairs' completion profile for one byte; other mixes are
        kept by size.
        """
        lo, hi = sizes.min(), sizes.max()
        if lo > 0 and hi <= lo * (1 + TOL):
            if sig.unit_done is None:
                sig.unit_done = self._waves(sig, np.ones(sizes.size))
            return sig.unit_done * hi
        key = sizes.tobytes()
        if sig.done is None or len(sig.done) > 256:
            sig.done = {}
        if key not in sig.done:
            sig.done[key] = self._waves(sig, sizes)
        return sig.done[key]

    @staticmethod
    def _waves(sig: _Signature, sizes: np.ndarray) -> np.ndarray:
        """Max-min rates until the first flows finish, then again for the rest, and so on."""
        done = np.zeros(sizes.size)
        active = sizes > 0
        remaining = sizes.astype(float)
        t = 0.0
        while active.any():
            rates = sig.flows.rates(active)
            idx = np.flatnonzero(active)
            ttf = remaining[idx] / rates[idx]
            batch = ttf <= ttf.min() * (1 + TOL)
            dt = ttf[batch].max()
            t += dt
            done[idx[batch]] = t
            remaining[idx] -= rates[idx] * dt
            active[idx[batch]] = False
        return done

    def run(self, steps, element_size: int = 4, collective: str = "allreduce", algo: str = "custom",
            *, nbytes: int | None = None, record: bool = False) -> SimResult:
        """Simulate a schedule (an iterable of ``Step``); lengths are elements of `element_size` bytes."""
        started = time.perf_counter()
        times, bottlenecks, slowest, used = [], [], [], {}
        messages = ([], [], []) if record else None
        for step in steps:
            if step.src.size == 0:
                continue
            sig = self._signature(step.src, step.dst)
            sizes = step.length * float(element_size)                        # (F,) bytes
            end = self._fluid(sig, sizes) + sig.alpha_wait                   # (F,) each message's end
            if self.gamma and step.reduce:                                   # sums after the step's messages
                finish = np.zeros(self.ranks)
                np.maximum.at(finish, sig.src, end)
                np.maximum.at(finish, sig.dst, end)
                finish += self.gamma * np.bincount(sig.dst, sizes, minlength=self.ranks)
                times.append(finish.max())
            else:
                times.append(end.max())
            if sizes.size and sizes.max() <= sizes.min() * (1 + TOL):
                bottlenecks.append(sig.bottleneck)
            else:
                per_cap = sig.flows.link_load(sizes) / sig.flows.cap
                bottlenecks.append(int(sig.flows.links[busiest(per_cap, self.topology.link_kind[sig.flows.links])]))
            slowest.append(sig.slowest)
            if id(sig) not in used:
                used[id(sig)] = sig
                sig.bytes_sent = np.zeros(sizes.size)
            sig.bytes_sent += sizes
            if record:
                messages[0].append(step.src), messages[1].append(step.dst), messages[2].append(sizes.astype(np.int64))
        link_bytes = np.zeros(self.topology.links)
        for sig in used.values():
            link_bytes[sig.flows.links] += sig.flows.link_load(sig.bytes_sent)
        if record:
            messages = tuple(np.concatenate(m) if m else np.zeros(0, np.int64) for m in messages)
        step_times = np.array(times)
        detail = FlowDetail(collective=collective, algo=algo, ranks=self.ranks, nbytes=int(nbytes or 0),
                            step_bottleneck=np.array(bottlenecks, dtype=np.int64), step_slowest=np.array(slowest),
                            link_bytes=link_bytes, routing=self.routing, placement=self.placement, messages=messages)
        return SimResult(model="flow", time_s=float(step_times.sum()), step_times=step_times,
                         wall_s=time.perf_counter() - started, topology=self.topology, detail=detail)
