"""The clock a ``Comm`` keeps: virtual time on an emulated network, or the wall clock.

Both answer the same few questions, so ``Comm`` never asks which one it has:

* ``now()``, ``restart()``, ``finish()``: the time since the run began, a fresh start, the end;
* ``post_send(req, tensor)``: stamp a send and say what goes on the wire ahead of the payload;
* ``recv_buffers(req, tensor)``: what to post receives into for one message;
* ``complete(req)``: wait for a message's data, book its ports, record its event, move the clock;
* ``computed(start, modelled, seconds)``: advance for a compute phase; ``unmodelled()``: the
  duration of a phase given neither seconds nor FLOPs; ``reduce_cost(nbytes)``: gamma * n.

``VirtualClock``: every message carries its sender's start time and size in a 16-byte header, in
front of the payload in one gloo message up to ``PACK_BYTES`` (a gloo send or receive costs ~0.3 ms
to post on a busy 2-core machine, so a second message per payload doubled a small message's cost)
and as a message of its own ahead of larger ones; the sender books its outgoing port and the
receiver its incoming port (``netlab.net.port``), each for alpha + n/B, and the receiver's clock
moves to max(its clock, the message's end). ``FabricClock``: the same virtual time, but a
congestion fabric (``netlab.cosim.live``) times every message; on a packet fabric it also answers
``first(requests)``: which of several posted receives is delivered first (``arrivals`` is True).
``WallClock``: ``time.perf_counter()`` since the run started; nothing is added to the messages.

Left out: moving data (``Comm`` posts the gloo sends and receives) and the trace's format.
"""
from __future__ import annotations

import struct
import time
from collections import defaultdict

from netlab.lazy import lazy
torch = lazy("torch", globals())

from ..net.port import PortCalendar

PACK_BYTES = 1 << 20        # virtual time: payloads up to this size travel in one message with their header
_HEADER = 16                # two float64: the sender's start time and the message's bytes
_HEADER_STRUCT = struct.Struct("=dd")


def nbytes_of(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _header(start: float, n: int) -> torch.Tensor:
    return torch.tensor([start, float(n)], dtype=torch.float64)


def _packed(start: float, n: int, tensor: torch.Tensor) -> torch.Tensor:
    buf = torch.empty(_HEADER + nbytes_of(tensor), dtype=torch.uint8)
    _HEADER_STRUCT.pack_into(buf.numpy(), 0, start, n)       # the two float64 of _header, without a tensor
    buf[_HEADER:].copy_(tensor.reshape(-1).view(torch.uint8))
    return buf


def _check_size(rank: int, req, sent: int) -> None:
    if sent != req.nbytes:
        raise RuntimeError(f"rank {rank}: recv from rank {req.peer} expected {req.nbytes} bytes "
                           f"but rank {req.peer} sent {sent} bytes")


class WallClock:
    """Seconds of ``time.perf_counter()`` since the run began (torchrun on a real cluster, or loopback)."""

    virtual = False
    arrivals = False             # cannot tell which of several messages arrives first in its time

    def __init__(self, *, rank: int, record):
        self.rank, self._record = rank, record       # record(kind, peer, nbytes, *, start, end)
        self._t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def restart(self) -> None:
        self._t0 = time.perf_counter()

    def finish(self) -> None:
        pass

    def check_size_only(self, nbytes: int) -> None:
        if nbytes:
            raise ValueError("tensor: size-only messages need an emulated network (virtual time)")

    def post_send(self, req, tensor):
        req.start = self.now()
        return None, tensor

    def recv_buffers(self, req, tensor) -> list:
        return [tensor] if tensor is not None else []

    def complete(self, req) -> None:
        req._arrive()
        req.end = self.now()
        self._record(req.kind, req.peer, req.nbytes, start=req.start, end=req.end)

    def computed(self, start: float, modelled, seconds) -> None:
        if seconds is not None:                      # an emulated compute phase: take as long as asked
            spare = seconds - (self.now() - start)
            if spare > 0:
                time.sleep(spare)

    def unmodelled(self):
        return None                                  # the body's measured time counts

    def reduce_cost(self, nbytes: int) -> None:
        pass                                         # the wall clock measured the arithmetic already


class VirtualClock:
    """Virtual seconds: messages book per-link-class ports, compute adds its modelled duration.

    ``t`` is the rank's clock; code that keeps a second timeline (``netlab.dataparallel.overlap``'s communication
    stream) may set it and put it back.
    """

    virtual = True
    arrivals = False             # a port model: a message's end depends on its receiver's wait order

    def __init__(self, network, *, rank: int, record):
        self.network, self.rank, self._record = network, rank, record
        self.t = 0.0
        self._ports: dict = {}                       # (link class, "out"|"in") -> Port

    def now(self) -> float:
        return self.t

    def restart(self) -> None:
        self.t = 0.0
        self._ports.clear()

    def finish(self) -> None:
        pass

    def check_size_only(self, nbytes: int) -> None:
        pass

    def _port(self, cls: str, direction: str) -> PortCalendar:
        return self._ports.setdefault((cls, direction), PortCalendar())

    def post_send(self, req, tensor):
        """Book the outgoing port, record the send; return (header message, payload left to send)."""
        n, dst = req.nbytes, req.peer
        cls = self.network.link_class(self.rank, dst)
        duration = self.network.link(self.rank, dst).time(n)
        start = self._port(cls, "out").reserve(self.t, duration)
        req.start, req.end = start, start + duration
        self._record("send", dst, n, start=start, end=req.end)
        if tensor is not None and n <= PACK_BYTES:           # header and payload in one message
            return _packed(start, n, tensor), None
        return _header(start, n), tensor

    def recv_buffers(self, req, tensor) -> list:
        if tensor is not None and req.nbytes <= PACK_BYTES:
            buf = torch.empty(_HEADER + req.nbytes, dtype=torch.uint8)   # what _packed sends: header, then payload
            req.header, req.buffer = buf[:_HEADER].view(torch.float64), buf
            req._unpack = lambda: tensor.view(-1).view(torch.uint8).copy_(buf[_HEADER:])
            return [buf]
        req.header = torch.empty(2, dtype=torch.float64)
        return [req.header] + ([tensor] if tensor is not None else [])

    def complete(self, req) -> None:
        if req.kind == "recv":
            req._arrive(1)                             # the header: when and how much was sent
            start, sent = req.header.tolist()
            sent = int(sent)
            _check_size(self.rank, req, sent)
            cls = self.network.link_class(req.peer, self.rank)
            link = self.network.link(req.peer, self.rank)
            duration = link.time(sent)
            begin = self._port(cls, "in").reserve(start, duration)
            req.end = begin + duration
            if link.framing is not None and link.ack_time(sent):    # TCP's ACKs leave on our own port
                self._port(cls, "out").reserve(begin, link.ack_time(sent))
            req._arrive()
            self._record("recv", req.peer, sent, start=begin, end=req.end)
        else:
            req._arrive()
        self.t = max(self.t, req.end)

    def computed(self, start: float, modelled, seconds) -> None:
        self.t += modelled

    def unmodelled(self):
        raise ValueError("compute: under virtual time give seconds or flops (the body's wall time is not used)")

    def reduce_cost(self, nbytes: int) -> None:
        if self.network.gamma:
            start = self.t
            self.t += self.network.gamma * nbytes
            self._record("compute", -1, 0, start=start, end=self.t, label="reduce")


class FabricClock(VirtualClock):
    """Virtual seconds in which a congestion fabric (``netlab.cosim.live``) times every message."""

    def __init__(self, network, *, rank: int, record):
        super().__init__(network, rank=rank, record=record)
        from ..cosim.live import FabricClient
        self._fabric = FabricClient(network.congestion, rank)
        self._seq_out, self._seq_in = defaultdict(int), defaultdict(int)
        self._leaving: list = []                     # sends timed by the fabric that gloo has yet to move
        # a packet fabric knows when each message lands; a flow fabric (FlowFabric.arrivals) does not say
        self.arrivals = getattr(network.congestion, "arrivals", not network.congestion.ports_only)

    def restart(self) -> None:
        super().restart()
        if self._fabric is not None:
            self._fabric.restart()

    def finish(self) -> None:
        """The run is over on this rank: let the fabric stop waiting for it."""
        if self._fabric is not None:
            self._fabric.close()
            self._fabric = None
        _LEAVING.extend(self._leaving)               # still moving through gloo: kept alive, never waited for
        self._leaving = []
        _LEAVING[:] = [r for r in _LEAVING if not _moved(r)]

    def post_send(self, req, tensor):
        """Report the send; its payload travels as a copy, so ``wait`` may return before gloo has moved it."""
        start = self.t
        seq = self._seq_out[req.peer]
        self._seq_out[req.peer] += 1
        self._fabric.send(req.peer, seq, start, req.nbytes)
        req.start, req.seq = start, seq
        if tensor is not None and req.nbytes <= PACK_BYTES:  # header and payload in one message
            return _packed(start, req.nbytes, tensor), None
        req.payload = tensor.clone() if tensor is not None else None
        return _header(start, req.nbytes), req.payload

    def recv_buffers(self, req, tensor) -> list:
        req.seq = self._seq_in[req.peer]
        req.before_arrive = self._blocked_on_data
        self._seq_in[req.peer] += 1
        return super().recv_buffers(req, tensor)

    def _blocked_on_data(self, req) -> None:
        """A receive's data is awaited outside ``complete`` (``Request.arrive``): tell the fabric first.

        From here on this rank promises to send nothing earlier than that message's start."""
        self._fabric.blocked_on_data(req.peer, req.seq, self.t)

    def first(self, requests: list):
        """The posted receive among `requests` whose message the fabric delivers first (ties: the lower
        sending rank, then the earlier message); blocks until that is certain, holding nothing back."""
        if not self.arrivals:
            raise ValueError("requests: the first of several messages to arrive needs a packet fabric "
                             "(a Congestion that is not the ideal transport with unlimited buffers)")
        if any(r.kind != "recv" for r in requests) or not requests:
            raise ValueError("requests: one or more posted receives")
        self._fabric.wait_any([(r.peer, r.seq) for r in requests], self.t)
        peer, seq = self._fabric.answer()
        return next(r for r in requests if (r.peer, r.seq) == (peer, seq))

    def complete(self, req) -> None:
        """A receive blocks on its data (reported first); a send only on the fabric's answer.

        gloo completes a send only once its receiver has posted the receive, which a program may do
        late (a parameter server posts one receive per worker at a time): blocking there would hold
        this rank's clock, and with it the fabric, at a time the receiver waits to see passed."""
        self._fabric.post_wait(req.kind, req.peer, req.seq, self.t)   # before blocking on data
        if req.kind == "recv":
            req._arrive()
            _check_size(self.rank, req, int(req.header[1]))
        else:
            self._leaving = [r for r in self._leaving if not _moved(r)] + [req]
        begin, req.end = self._fabric.answer()
        self._record(req.kind, req.peer, req.nbytes, start=begin, end=req.end)
        self.t = max(self.t, req.end)


_LEAVING: list = []          # fabric sends of finished runs that gloo has yet to move (kept alive)


def _moved(req) -> bool:
    """True once gloo has moved every part of a send (without blocking)."""
    while req._moved < len(req.handles) and req.handles[req._moved].is_completed():
        req._arrive(req._moved + 1)
    return req._moved == len(req.handles)


def clock_for(network, *, rank: int, record):
    """The clock a rank keeps on `network`: wall time without one, virtual time with one."""
    if network is None:
        return WallClock(rank=rank, record=record)
    if getattr(network, "congestion", None) is not None:
        if not network.congestion.address:
            raise ValueError("network: congestion= needs netlab's own rank pool (netlab.run), not torchrun")
        return FabricClock(network, rank=rank, record=record)
    return VirtualClock(network, rank=rank, record=record)
