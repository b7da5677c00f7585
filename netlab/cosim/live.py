"""Real ranks on a congestion-aware fabric: one coordinator that sees every message in virtual time.

``netlab.network("10Gbit/s", "10us", congestion=Congestion("reno", buffer="64K"))`` (``fabric.congestion.py``) puts
a switch between the ranks: every rank's NIC feeds one switch whose port toward each rank has a buffer in
bytes (drop-tail, optional ECN marking, optional PFC), and each message is a flow of packets
driven by a transport (Reno, Cubic, DCTCP, DCQCN or an ideal paced sender: ``netlab.fabric``'s
packet-level engine). Tensors still move through gloo; only their timing comes from here.

Why a coordinator, and how it stays exact (conservative discrete-event simulation, Chandy-Misra
style without null messages). A message's time depends on every other message that shares a
queue with it, so no rank can time its own messages; the launcher runs a ``Coordinator`` thread
that every rank reports to over a private Unix socket:
  * a send is reported when it is posted, with the sender's clock (its start time);
  * a wait is reported *before* the rank blocks, with its clock: from then on the rank cannot send
    until that message completes, so it does not hold the simulation back;
  * a rank that is running (computing, or between calls) may still send at its last reported
    clock or later, so the fabric only processes events strictly earlier than the smallest such
    clock. Flows are injected in a canonical order (start, src, dst, seq), so the answer is the
    same whichever rank's report reaches the coordinator first: deterministic on any machine.
  * a rank about to block on data outside ``comm.wait`` (``Request.arrive``, which the parameter
    server uses on the port model) reports it; it is bounded by that message's start (it promises to
    send nothing earlier) or, while the message is unsent, by its sender's bound. A send that breaks
    the promise is refused with a clear error (docs/fabric.md), as is any send earlier than an event
    the fabric has already processed;
  * ``comm.wait_first`` (a parameter server taking pushes as they land, ASP and SSP included) is
    reported like a wait on several receives: the coordinator answers with the one delivered first
    (ties: lower sender, then earlier message) once every event at or before its delivery time
    has been processed; until it answers, the fabric runs no further than that time, at which the
    rank may send again. A message not yet injected starts no earlier than the fabric's clock, so
    it cannot arrive earlier.

The ideal transport with unlimited buffers and no ECN/PFC is today's port model (each NIC port
serves messages in the order its program posts them, alpha + n/B each): the coordinator books the
same ports in the same order, so chapters 1-5 give exactly the same times (tested).

Chapter 9's options (``Congestion(topology=..., multipath=..., trim=..., planes=..., failure=...)``) build
the fabric from a ``netlab.net`` topology instead (``fabric.multiswitch.SwitchedNetwork``): ranks sit on its hosts
in the spec's placement, each message is a flow over every shortest path between them, and one path chooser
per sender -> receiver pair (a connection) lives across its messages. A network built with ``framing=``
(``net/framing.py``) sends packets of its payload size with its headers on the wire.

``FlowFabric`` (``flows.py``) times the same way on a flow-level fabric instead: chapter 5's topologies with
hosts of several accelerators behind shared NICs, each message a fluid flow over its routed path, max-min
fair, events only where flows start and end.

Left out on purpose: more than one rank per host on the packet fabric (intra-host links); per-message cost
is two local socket messages per side.
"""
from __future__ import annotations

import dataclasses
import heapq
import math
import os
import secrets
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Listener, wait

from ..net.port import PortCalendar
from ..fabric.congestion import Congestion
from .flows import FlowEngine, FlowFabric


def _framing(link) -> tuple[int, int]:
    """(header bytes on the wire per packet, payload bytes per packet) of a link's framing, or none."""
    from ..fabric.switch import MTU
    framing = getattr(link, "framing", None)
    if framing is None:
        return 0, MTU
    return framing.overhead, framing.payload


# ---- the rank's side ------------------------------------------------------------------------------
class FabricClient:
    """A rank's line to the coordinator: report sends, report a wait, then read its answer."""

    def __init__(self, congestion: "LaunchedCongestion | LaunchedFlowFabric", rank: int):
        self.conn = Client(congestion.address, "AF_UNIX", authkey=congestion.authkey)
        self.conn.send(("hello", rank))

    def send(self, dst: int, seq: int, start: float, nbytes: int) -> None:
        self.conn.send(("send", dst, seq, start, nbytes))

    def post_wait(self, kind: str, peer: int, seq: int, clock: float) -> None:
        self.conn.send(("wait", kind, peer, seq, clock))

    def wait_any(self, keys: list, clock: float) -> None:
        """About to block until the first of these receives ((peer, seq) each) completes; ``answer`` names it."""
        self.conn.send(("any", [tuple(k) for k in keys], clock))

    def blocked_on_data(self, peer: int, seq: int, clock: float) -> None:
        """About to block until message `seq` from `peer` has moved, outside ``comm.wait`` (no answer comes)."""
        self.conn.send(("data", peer, seq, clock))

    def answer(self) -> tuple:
        """(begin, end) of the message waited for, in virtual seconds; after ``wait_any``: (peer, seq)."""
        reply = self.conn.recv()
        if isinstance(reply, str):
            raise RuntimeError(reply)
        return reply

    def restart(self) -> None:
        self.conn.send(("restart",))

    def close(self) -> None:
        try:
            self.conn.send(("done",))
            self.conn.close()
        except OSError:
            pass


# ---- the line between the launcher and its ranks ---------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class LaunchedCongestion(Congestion):
    """A ``Congestion`` as the ranks receive it for one run: the user's switch, and the line (a Unix
    socket's address and its key) to the run's ``Coordinator``. Made by ``launched``, never by hand."""
    address: str = ""
    authkey: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, kw_only=True)
class LaunchedFlowFabric(FlowFabric):
    """A ``FlowFabric`` as the ranks receive it for one run, with the line to its ``Coordinator``."""
    address: str = ""
    authkey: bytes = field(default=b"", repr=False)


def launched(spec, address: str, authkey: bytes):
    """`spec` (a ``Congestion`` or ``FlowFabric``) on the line to one run's coordinator."""
    cls = LaunchedFlowFabric if isinstance(spec, FlowFabric) else LaunchedCongestion
    values = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.init}
    return cls(**values, address=address, authkey=authkey)


# ---- the launcher's side ---------------------------------------------------------------------------
@dataclass
class _Message:
    start: float                 # the sender's clock when it posted the send
    nbytes: int
    begin: float | None = None   # the port model: when the sender's port took it
    end: float | None = None     # when it was complete (ports: the sender's port; fabric: delivered)


class _Messages:
    """The bookkeeping of one epoch's messages: each send as reported, keyed (src, dst, seq), and the
    sends a fabric has yet to inject."""

    def __init__(self):
        self.by_key: dict[tuple, _Message] = {}     # (src, dst, seq) -> message
        self.pending: list[tuple] = []               # packet mode: (start, src, dst, seq) not yet injected

    def get(self, key: tuple) -> _Message | None:
        return self.by_key.get(key)

    def __getitem__(self, key: tuple) -> _Message:
        return self.by_key[key]

    def add(self, key: tuple, start: float, nbytes: int) -> _Message:
        msg = self.by_key[key] = _Message(start, nbytes)
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


class _Clocks:
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

    def horizon(self, messages: _Messages) -> float:
        """Just past the earliest completion a rank waiting for the first of several messages could be told:
        the fabric must not run beyond it (that rank will send at that time), only finish its ties."""
        ends = [first[0] for what, keys in filter(None, self.waiting) if what == "any"
                and (first := messages.first(keys)) is not None]
        return math.nextafter(min(ends), math.inf) if ends else math.inf


class _FabricDriver:
    """The model that times one epoch's messages, and what it observed: the port model (``fabric.engine`` None:
    each NIC port books its messages in order), the switch fabric between the ranks, chapter 9's switched
    network, or a flow-level fabric (``FlowFabric``). ``all_done()`` says whether every rank is done
    (background traffic lasts until then) and ``running()`` whether, besides, the run goes on (a pause
    storm lasts that long)."""

    def __init__(self, spec, network, ranks: int, all_done, running):
        self.spec, self.network, self.ranks, self.all_done = spec, network, ranks, all_done
        self.flow_level = isinstance(spec, FlowFabric)
        self.completed = False                       # set when a message completes
        n, link = ranks, network.nic
        if self.flow_level:                          # chapter 5's topologies, timed flow by flow (flows.py)
            self.engine = FlowEngine(spec, n)
        elif spec.ports_only:
            self.out_ports = [PortCalendar() for _ in range(n)]
            self.in_ports = [PortCalendar() for _ in range(n)]
            self.engine = None
        elif spec.switched:
            self._switched(link)
        else:
            from ..fabric.engine import Fabric
            from ..fabric.switch import Switch  # noqa: F401  (the switch is built by Fabric.switch)
            self.engine = Fabric(seed=spec.seed)
            sw = self.engine.switch("switch", pfc=spec.pfc)
            hop = link.latency / 2                   # two links: a rank's one-way latency is alpha
            self.nics = [self.engine.port(f"rank{r}.nic", link.bandwidth, hop) for r in range(n)]
            self.downs = [self.engine.port(f"switch->rank{r}", link.bandwidth, hop, spec.buffer,
                                           ecn=spec.ecn, switch=sw) for r in range(n)]
            if spec.pfc is not None:
                spec.pfc.check(spec.buffer, link.bandwidth, hop)
            self.flows = []
            if spec.background:
                self._background(link, hop)
            if spec.storm is not None:                       # one host pauses its downlink (fabric/storm.py)
                spec.storm.install(self.engine, self.downs[spec.storm.rank], spec.pfc.priorities, running)

    def _switched(self, link) -> None:
        """Chapter 9's fabric: the spec's topology (or planes, or trimming on one switch) as switches and
        ports (``fabric.multiswitch.SwitchedNetwork``), ranks on its hosts in the spec's placement."""
        from ..fabric import ethernet
        from ..fabric.engine import Fabric
        spec = self.spec
        topo = ethernet.topology(spec.topology or "star", self.ranks, link.bandwidth, link.latency)
        if self.ranks > topo.size:
            raise ValueError(f"topology: {topo.name} has {topo.size} hosts, the run has {self.ranks} ranks")
        self.engine = Fabric(seed=spec.seed)
        self.net = ethernet.SwitchedNetwork(self.engine, topo, switch=spec, ecn=spec.ecn,
                                            framing=getattr(link, "framing", None))
        self.slots = [int(s) for s in topo.placement(self.ranks, spec.placement, spec.seed)]
        self.choosers: dict = {}                     # (src, dst) -> the connection's path chooser
        self.flows = []
        if spec.failure is not None:
            self.net.fail(spec.failure)

    def _background(self, link, hop) -> None:
        """Another job's seeded Poisson flows into one rank's port, for as long as any rank runs."""
        import random

        from ..fabric import transport as tp
        spec, fab = self.spec, self.engine
        if spec.background_to >= self.ranks:
            raise ValueError(f"background_to: rank {spec.background_to} of {self.ranks}")
        nic = fab.port("other-job.nic", link.bandwidth, hop)
        rng, gap = random.Random(spec.seed), spec.background_size / (spec.background * link.bandwidth)
        options = {"max_window": spec.window} if spec.window is not None and tp.takes_window(spec.transport) else {}

        def arrival(_=None):
            if self.all_done():
                return
            flow = tp.flow_class(spec.transport)(fab, f"bg{len(fab.flows)}", [nic, self.downs[spec.background_to]],
                                                 spec.background_size, start=fab.now)
            fab.add_flow(flow, tp.make(spec.transport, flow, spec.rto_min, **options))
            fab.schedule(fab.now + rng.expovariate(1 / gap), arrival)
        fab.schedule(rng.expovariate(1 / gap), arrival)

    # -- the port model
    def book_send(self, rank: int, msg: _Message) -> None:
        """The port model: the sender's port takes the message in the order its program posts them."""
        duration = self.network.nic.time(msg.nbytes)
        msg.begin = self.out_ports[rank].reserve(msg.start, duration)
        msg.end = msg.begin + duration

    def port_reply(self, rank: int, what: str, msg: _Message):
        """The port model's (begin, end) for `rank` waiting on `msg`: a receive books the receiver's port,
        in its wait order (None while the sender's port has yet to take the message)."""
        if what != "recv":
            return (msg.begin, msg.end)
        if msg.begin is None:
            return None
        nic = self.network.nic
        duration = nic.time(msg.nbytes)
        begin = self.in_ports[rank].reserve(msg.begin, duration)
        reply = (begin, begin + duration)
        if nic.framing is not None and nic.ack_time(msg.nbytes):
            self.out_ports[rank].reserve(begin, nic.ack_time(msg.nbytes))   # as clock.py
        return reply

    # -- a fabric
    def final(self, end: float) -> bool:
        """Has every event at or before `end` been processed? Then no other message can still complete by
        `end`: a flow not yet injected starts no earlier than the fabric's clock (>= end) and takes time."""
        heap = self.engine._heap
        return not heap or heap[0][0] > end

    def simulate_before(self, limit: float) -> bool:
        """Process events earlier than `limit`; stop right after a message completes (True if one did)."""
        fab, heap, pop = self.engine, self.engine._heap, heapq.heappop
        self.completed = False
        n = 0
        while heap and heap[0][0] < limit and not self.completed:
            t, _, fn, arg = pop(heap)
            fab.now = t
            fn(arg)
            n += 1
        fab.events += n
        return self.completed

    def inject(self, start, src, dst, seq, msg: _Message) -> None:
        from ..fabric import transport as tp

        def done(flow, msg=msg):
            msg.end = flow.done_at
            self.completed = True

        def done_at(end, msg=msg):
            msg.end = end
            self.completed = True

        if self.flow_level:
            self.engine.post((src, dst, seq), src, dst, msg.nbytes, start, lambda end: done_at(end))
            return
        if self.spec.switched:
            from ..fabric.ethernet import transport_options
            spec, net = self.spec, self.net
            a, b = self.slots[src], self.slots[dst]
            if (src, dst) not in self.choosers:           # one chooser per connection, kept across messages
                self.choosers[(src, dst)] = net.chooser(net.node(a), net.node(b), spec.multipath, spec.seed)
            options = transport_options(spec.transport, spec.trim, spec.window, spec.credit_rate)
            if spec.transport == "rccc":
                options["unscheduled"] = spec.unscheduled
            flow = net.flow(f"{src}->{dst}#{seq}", a, b, max(msg.nbytes, 1), start=start, transport=spec.transport,
                            chooser=self.choosers[(src, dst)], on_done=done)
            sender = net.sender(spec.transport, flow, spec.rto_min, options)
            self.engine.add_flow(flow, sender)
            self.flows.append(flow)
            return
        overhead, mss = _framing(self.network.nic)
        flow = tp.flow_class(self.spec.transport)(self.engine, f"{src}->{dst}#{seq}", [self.nics[src], self.downs[dst]],
                                                  max(msg.nbytes, 1), start=start, mss=mss, on_done=done)
        flow.overhead = overhead
        options = {}
        if self.spec.window is not None and tp.takes_window(self.spec.transport):
            options["max_window"] = self.spec.window
        self.engine.add_flow(flow, tp.make(self.spec.transport, flow, self.spec.rto_min, **options))
        self.flows.append(flow)

    # -- what a run observed
    def summary(self) -> dict:
        """Drops, ECN marks, pause time, timeouts and retransmissions over the run (fabric runs)."""
        if self.engine is None:
            return {"model": "ports"}
        if self.flow_level:
            return self.engine.summary()
        ports = self.engine.ports.values()
        senders = [f.sender for f in self.flows if f.sender is not None]
        out = {"model": "fabric", "drops": sum(p.drops for p in ports), "marks": sum(p.marks for p in ports),
               "pause_s": sum(p.paused_seconds() for p in ports),
               "timeouts": sum(s.timeouts for s in senders),
               "retransmissions": sum(s.retransmissions for s in senders),
               "flows": len(self.flows), "events": self.engine.events}
        from ..fabric.transport import UNORDERED
        if self.spec.switched or self.spec.transport in UNORDERED:
            out["trims"] = sum(getattr(p, "trims", 0) for p in ports)
            out["nacks"] = sum(getattr(s, "nacked", 0) for s in senders)
            out["duplicates"] = sum(f.duplicates for f in self.flows)
        if self.spec.switched:
            out["link_bytes"] = self.net.link_bytes("fabric")
            if self.spec.failure is not None:
                out["failure_happened"] = self.spec.failure.at <= self.engine.now
                out["lost_on_failed_link"] = sum(getattr(p, "lost", 0) for _, ps in self.net.failures for p in ps)
        return out


    def tracks(self) -> list[dict]:
        """What the fabric recorded over time, as counter tracks for the trace (``Trace.counters``).

        Per port that ever queued, dropped, marked or paused: its queue in bytes, cumulative drops and
        ECN marks, priorities paused. Per sender -> receiver pair: the window (packets; DCQCN: rate in
        bytes/s) of its messages one after another. Per sending rank: cumulative retransmissions and
        timeouts. Each track: name, unit, times (s), values. Lists are shared, not copied."""
        if self.engine is None or self.flow_level:
            return []
        self.engine.catch_up(self.engine.now)        # timers asleep since their sender's last wake: fire them
        out = []

        def steps(times):
            return sorted(times), list(range(1, len(times) + 1))

        for port in self.engine.ports.values():
            if max(port.q_bytes) > 0:
                out.append({"track": f"{port.name} queue", "unit": "bytes", "t": port.q_t, "v": port.q_bytes})
            for what, times in (("drops", port.drop_t), ("ECN marks", port.mark_t),
                                ("trims", getattr(port, "trim_t", ()))):
                if times:
                    out.append({"track": f"{port.name} {what}", "unit": what.split()[-1], "t": times,
                                "v": list(range(1, len(times) + 1))})
            if port.pauses:
                out.append({"track": f"{port.name} paused", "unit": "priorities", "t": port.pause_t,
                            "v": port.pause_n})
        pairs, ranks = {}, {}
        for flow in self.flows:
            sender = flow.sender
            if sender is None:
                continue
            src, dst = flow.name.split("#")[0].split("->")
            pairs.setdefault((int(src), int(dst)), []).append(sender)
            ranks.setdefault(int(src), []).append(sender)
        from ..fabric.transport import TRANSPORTS
        unit = "bytes/s" if TRANSPORTS[self.spec.transport].rate_based else "packets"
        for (src, dst), senders in sorted(pairs.items()):
            t = [x for s in senders for x in s.w_t]
            if t:
                out.append({"track": f"window {src}->{dst}", "unit": unit, "t": t,
                            "v": [x for s in senders for x in s.w]})
        for src, senders in sorted(ranks.items()):
            for what, attr in (("retransmissions", "retx_t"), ("timeouts", "timeout_t")):
                times = [x for s in senders for x in getattr(s, attr)]
                if times:
                    t, v = steps(times)
                    out.append({"track": f"rank {src} {what}", "unit": what, "t": t, "v": v})
        return out


class Coordinator:
    """Times every message of one run on real ranks; ``start()``, give ranks ``fabric.congestion``, ``close()``.

    It serves the ranks' reports over a Unix socket (the protocol in the module's docstring), keeps their
    clocks (``_Clocks``) and messages (``_Messages``), and drives the fabric that times them
    (``_FabricDriver``) no further than no rank can still send. A restart (a rank's next program) starts
    a new epoch with fresh ones, once every rank is in it."""

    def __init__(self, ranks: int, network, directory: str):
        self.ranks, self.network = ranks, network
        self.spec: Congestion = network.congestion
        self.flow_level = isinstance(self.spec, FlowFabric)
        if self.flow_level:
            self.spec.check(network)
        elif network.ranks_per_host != 1:
            raise ValueError("congestion: one rank per host only on real ranks (intra-host links are not "
                             "modelled by the switch fabric)")
        elif self.spec.storm is not None and self.spec.storm.rank >= ranks:
            raise ValueError(f"storm-rank: rank {self.spec.storm.rank} of {ranks}")
        key = secrets.token_bytes(16)
        self.address = os.path.join(directory, f"fabric-{secrets.token_hex(4)}")
        self._listener = Listener(self.address, "AF_UNIX", authkey=key)
        self.congestion = launched(self.spec, self.address, key)   # what the ranks are given
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.epoch = [0] * ranks
        self._reset()
        self._thread = threading.Thread(target=self._serve, name="netlab-fabric", daemon=True)

    def _reset(self) -> None:
        """A new epoch: fresh clocks, messages and fabric (the epoch counts carry over)."""
        self.clocks = _Clocks(self.ranks)
        self.messages = _Messages()
        self.deferred: list[tuple] = []              # reports from ranks already in the next epoch
        self.driver = _FabricDriver(self.spec, self.network, self.ranks, lambda: self.clocks.all_done(),
                                    lambda: not self._stop.is_set() and not self.clocks.all_done())

    # -- serving ---------------------------------------------------------------------------------
    def start(self) -> "Coordinator":
        self._thread.start()
        return self

    def settle(self, timeout: float = 5.0) -> None:
        """Wait for the fabric to finish after every rank reported done (its last events and summary).

        A rank reports done before it returns its result, so the launcher can hold every result while
        this thread has yet to read the last reports; without this wait the summary's event count
        depends on which came first."""
        self._thread.join(timeout)

    def close(self) -> None:
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self._thread.join(timeout=5)
        try:
            os.unlink(self.address)
        except OSError:
            pass

    def _serve(self) -> None:
        conns = {}
        try:
            while len(conns) < self.ranks and not self._stop.is_set():
                conn = self._listener.accept()
                kind, rank = conn.recv()
                conns[rank] = conn
            self.conns = conns
            by_conn = {c: r for r, c in conns.items()}
            while not self._stop.is_set() and not self.clocks.all_done():
                got = wait(list(conns.values()), timeout=0.2)
                for conn in got:
                    try:
                        message = conn.recv()
                    except (EOFError, OSError):
                        self._report(by_conn[conn], ("done",))
                        conns.pop(by_conn[conn])
                        continue
                    self._report(by_conn[conn], message)
                self._advance()
        except (OSError, EOFError):
            pass                                     # closed by the launcher (a failed or interrupted run)
        except BaseException as exc:  # noqa: BLE001 -- handed to the ranks and the launcher
            self.error = exc
            for conn in conns.values():
                try:
                    conn.send(f"the congestion fabric failed: {type(exc).__name__}: {exc}")
                except OSError:
                    pass

    # -- the ranks' reports ----------------------------------------------------------------------
    def _report(self, rank: int, message: tuple) -> None:
        kind = message[0]
        clocks, engine = self.clocks, self.driver.engine
        if kind == "restart":
            self.epoch[rank] += 1
            if all(e == self.epoch[rank] for e in self.epoch):          # everyone is in the new epoch
                deferred = self.deferred
                self._reset()
                for r, m in deferred:
                    self._report(r, m)
            else:
                clocks.hold(rank)
            return
        if self.epoch[rank] > min(self.epoch):
            self.deferred.append((rank, message))
            return
        if kind == "done":
            clocks.done(rank)
        elif kind == "send":
            _, dst, seq, start, nbytes = message
            if engine is not None and start < clocks.promise[rank]:
                raise RuntimeError(
                    f"network: rank {rank} sent at t={start:.9g}s after waiting outside comm.wait for data sent at "
                    f"t={clocks.promise[rank]:.9g}s; the congestion fabric times a program conservatively and cannot "
                    f"go back in time: take messages as they arrive with comm.wait_first, or run without "
                    f"congestion=")
            if self.flow_level and self.spec.causal and start < clocks.lb[rank]:
                raise RuntimeError(f"network: rank {rank} sent at t={start:.9g}s, earlier than its own clock had "
                                   f"reached (t={clocks.lb[rank]:.9g}s): a program's clock only moves forward")
            if engine is not None and start < engine.now:
                raise RuntimeError(f"network: rank {rank} sent at t={start:.9g}s, after the congestion fabric had "
                                   f"timed events up to t={engine.now:.9g}s (a send into its past)")
            clocks.reached(rank, start)
            msg = self.messages.add((rank, dst, seq), start, nbytes)
            if engine is None:                                            # today's model: the sender's port
                self.driver.book_send(rank, msg)
            else:
                self.messages.pending.append((start, rank, dst, seq))
                for r, key in enumerate(clocks.data):                    # ranks blocked on this message's data
                    if key == (rank, dst, seq):
                        clocks.seen(r, start)
        elif kind == "data" and engine is not None:                       # (the port model needs no bound)
            _, peer, seq, clock = message
            clocks.reached(rank, clock)
            msg = self.messages.get((peer, rank, seq))
            if msg is not None:
                clocks.seen(rank, msg.start)
            else:
                clocks.block_on_data(rank, (peer, rank, seq))
        elif kind == "wait":
            _, what, peer, seq, clock = message
            clocks.reached(rank, clock)
            key = (rank, peer, seq) if what == "send" else (peer, rank, seq)
            clocks.block(rank, (what, key))
        elif kind == "any":
            _, keys, clock = message
            if engine is None or self.flow_level:
                raise RuntimeError("network: waiting for the first of several messages needs a packet fabric")
            clocks.reached(rank, clock)
            clocks.block(rank, ("any", [(peer, rank, seq) for peer, seq in keys]))

    def _answer(self) -> bool:
        """Reply to every blocked rank whose message is timed; True if any was."""
        answered = False
        clocks, driver = self.clocks, self.driver
        for rank, waiting in enumerate(clocks.waiting):
            if waiting is None:
                continue
            what, key = waiting
            if what == "any":
                first = self.messages.first(key)
                if first is None or not driver.final(first[0]):
                    continue
                end, (src, _, seq) = first
                clocks.release(rank, end)
                self.conns[rank].send((src, seq))
                answered = True
                continue
            msg = self.messages.get(key)
            if msg is None:
                continue
            if driver.engine is None:
                reply = driver.port_reply(rank, what, msg)
                if reply is None:
                    continue
            elif msg.end is None:
                continue
            else:
                reply = (msg.start, msg.end)
            clocks.release(rank, reply[1])
            self.conns[rank].send(reply)
            answered = True
        return answered

    def _advance(self) -> None:
        """Answer what can be answered, simulating the fabric only as far as no rank can still send."""
        while True:
            self._answer()
            if self.driver.engine is None or self.clocks.all_done():
                return
            bound = self.clocks.bound()
            next_start = self.messages.next_start()
            horizon = self.clocks.horizon(self.messages)
            limit = min(bound, next_start, horizon)
            if self.driver.simulate_before(limit):
                continue                                                  # a message completed: answer it
            if next_start < bound and next_start <= horizon and next_start != math.inf:
                # every event before next_start is done: inject its flows, in a canonical order, now
                for start, src, dst, seq in self.messages.take(next_start):
                    self.driver.inject(start, src, dst, seq, self.messages[(src, dst, seq)])
                continue
            if horizon <= bound and horizon < next_start:
                continue                                                  # every tie is in: answer the first
            return

    # -- what a run observed -----------------------------------------------------------------------
    def summary(self) -> dict:
        """Drops, ECN marks, pause time, timeouts and retransmissions over the run (fabric runs)."""
        return self.driver.summary()

    def tracks(self) -> list[dict]:
        """What the fabric recorded over time, as counter tracks for the trace (``Trace.counters``)."""
        return self.driver.tracks()
