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

The pieces, one job each: this module's ``Coordinator`` serves the ranks' reports and decides how far
the fabric may run; ``protocol.py`` is the line itself (a rank's ``FabricClient``, the spec the ranks are
given); ``state.py`` what the coordinator knows of messages and clocks; ``driver.py`` the model that
times the messages (ports, a switch, chapter 9's network, or ``FlowFabric``) and what it observed.

Left out on purpose: more than one rank per host on the packet fabric (intra-host links); per-message cost
is two local socket messages per side.
"""
from __future__ import annotations

import math
import os
import secrets
import threading
from multiprocessing.connection import Listener, wait

from ..fabric.congestion import Congestion
from .driver import FabricDriver
from .flows import FlowFabric
from .protocol import FabricClient, LaunchedCongestion, LaunchedFlowFabric, launched  # noqa: F401  (imported from here)
from .state import Clocks, Messages


class Coordinator:
    """Times every message of one run on real ranks; ``start()``, give ranks ``fabric.congestion``, ``close()``.

    It serves the ranks' reports over a Unix socket (the protocol in the module's docstring), keeps their
    clocks (``Clocks``) and messages (``Messages``), and drives the fabric that times them
    (``FabricDriver``) no further than no rank can still send. A restart (a rank's next program) starts
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
        self.clocks = Clocks(self.ranks)
        self.messages = Messages()
        self.deferred: list[tuple] = []              # reports from ranks already in the next epoch
        self.driver = FabricDriver(self.spec, self.network, self.ranks, all_done=lambda: self.clocks.all_done(),
                                   running=lambda: not self._stop.is_set() and not self.clocks.all_done())

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
                for _, src, dst, seq in self.messages.take(next_start):
                    self.driver.inject((src, dst, seq), self.messages[(src, dst, seq)])
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
