"""What rank code calls to communicate: send/recv/sendrecv and compute, with a clock and a trace.

Tensors really move between processes through torch.distributed (gloo); only the clock is chosen:

* virtual time (a ``Network`` is given): every message carries its sender's start time and size
  in a 16-byte header, in front of the payload in one gloo message up to ``PACK_BYTES`` (a gloo
  send or receive costs ~0.3 ms to post on a busy 2-core machine, so a second message per
  payload doubled a small message's cost) and as a message of its own ahead of larger ones; the
  sender books its outgoing port and the receiver its incoming port (``netlab.net.port``), each for alpha + n/B, and the receiver's
  clock moves to max(its clock, the message's end). Compute advances the clock by a modelled
  duration (FLOPs / (peak * efficiency), or given seconds). Exact and deterministic: the same
  program gives the same times on any machine, idle or loaded.
* wall time (no network): the clock is ``time.perf_counter()`` since the run started, used on a
  real cluster under torchrun or on the machine's own loopback. The same events are recorded.

Every operation appends an event (rank, kind, peer, bytes, start, end, label) to ``comm.events``.
Size-only messages (``tensor=None, nbytes=n``) move only the header: the timing of a 256 MB
message without 256 MB of memory, for sweeps; the virtual times are identical to a real payload's.
"""
from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..net.network import Network
from ..net.port import Port
from ..net.presets import Device


@dataclass
class Event:
    rank: int
    kind: str        # "send" | "recv" | "compute" | "region"
    peer: int        # the other rank, -1 for compute and regions
    bytes: int
    start: float     # seconds of the clock in use (virtual or wall), since the run began
    end: float
    label: str = ""

    def as_tuple(self):
        return (self.rank, self.kind, self.peer, self.bytes, self.start, self.end, self.label)


class Request:
    """A posted send or receive; ``comm.wait(req)`` completes it and moves the clock."""

    def __init__(self, kind: str, peer: int, nbytes: int, handles: list, header=None, end=None, label=""):
        self.kind, self.peer, self.nbytes, self.handles = kind, peer, nbytes, handles
        self.header, self.end, self.label, self.done = header, end, label, False
        self._moved = 0                              # handles whose transport has completed
        self.buffer = None                           # a packed message (header + payload) in flight
        self._unpack = None                          # copies a packed payload into the caller's tensor

    def arrive(self, upto: int | None = None) -> None:
        if getattr(self, "timed_by_fabric", False):
            raise RuntimeError("network: this program waits for data outside comm.wait (as the parameter server's "
                               "arrival-order logic does), which the congestion fabric cannot time; run it "
                               "without congestion=")
        self._arrive(upto)

    def _arrive(self, upto: int | None = None) -> None:
        """Block until the data has moved (the first `upto` handles), without booking ports or moving
        the clock: ``comm.wait`` does that later, exactly as if it had waited itself. A parameter
        server uses it to learn which pushes are in before choosing, by virtual time, which to apply.
        (gloo's wait must not be called twice on a finished receive: the second call blocks.)"""
        upto = len(self.handles) if upto is None else upto
        while self._moved < upto:
            self.handles[self._moved].wait()
            self._moved += 1
            if self._moved == len(self.handles) and self._unpack is not None:
                self._unpack()
                self._unpack = None


def nbytes_of(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


PACK_BYTES = 1 << 20        # virtual time: payloads up to this size travel in one message with their header
_HEADER = 16                # two float64: the sender's start time and the message's bytes


def _header(start: float, n: int) -> torch.Tensor:
    return torch.tensor([start, float(n)], dtype=torch.float64)


def _packed(start: float, n: int, tensor: torch.Tensor) -> torch.Tensor:
    buf = torch.empty(_HEADER + nbytes_of(tensor), dtype=torch.uint8)
    buf[:_HEADER].view(torch.float64).copy_(_header(start, n))
    buf[_HEADER:].copy_(tensor.reshape(-1).view(torch.uint8))
    return buf


class Comm:
    """One rank's view: ``rank``, ``world_size``, point-to-point calls, ``compute``, ``now()``."""

    def __init__(self, rank: int, world_size: int, network: Network | None = None,
                 device: Device | None = None, tag: int = 0, status=None, group=None):
        self.rank, self.world_size = rank, world_size
        self.network, self.device, self.tag, self.group = network, device, tag, group
        self.virtual = network is not None
        self.events: list[Event] = []
        self.bytes_sent = self.bytes_recv = self.messages_sent = self.messages_recv = 0
        self._status = status                     # shared buffer the launcher reads on a timeout
        self._clock = 0.0
        self._ports = {}                          # (link class, "out"|"in") -> Port
        self._labels: list[str] = []
        self._t0 = time.perf_counter()
        self._fabric = None                       # a congestion-aware fabric times the messages (fabric/live.py)
        congestion = getattr(network, "congestion", None)
        if congestion is not None:
            if not congestion.address:
                raise ValueError("network: congestion= needs netlab's own rank pool (netlab.run), not torchrun")
            from ..fabric.live import FabricClient
            self._fabric = FabricClient(congestion, rank)
            self._seq_out, self._seq_in = defaultdict(int), defaultdict(int)

    def finish(self) -> None:
        """The run is over on this rank (the launcher calls it): let the fabric stop waiting for it."""
        if self._fabric is not None:
            self._fabric.close()
            self._fabric = None

    # ---- the clock -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the run began: virtual time if a network is emulated, else wall time."""
        return self._clock if self.virtual else time.perf_counter() - self._t0

    def restart_clock(self) -> None:
        """Start the clock again from zero with idle ports (a benchmark's next size, say)."""
        self._clock = 0.0
        self._ports.clear()
        self._t0 = time.perf_counter()
        if self._fabric is not None:
            self._fabric.restart()

    def _port(self, cls: str, direction: str) -> Port:
        return self._ports.setdefault((cls, direction), Port())

    def _event(self, kind, peer, nbytes, start, end, label=None):
        label = label if label is not None else (self._labels[-1] if self._labels else "")
        self.events.append(Event(self.rank, kind, peer, int(nbytes), start, end, label))

    def _set_status(self, text: str) -> None:
        if self._status is not None:
            self._status(text)

    # ---- point to point --------------------------------------------------------------
    def _check_peer(self, peer: int, what: str) -> None:
        if not isinstance(peer, int) or not 0 <= peer < self.world_size or peer == self.rank:
            raise ValueError(f"{what}: rank {self.rank} cannot talk to rank {peer!r} "
                             f"(world size {self.world_size})")

    def _size(self, tensor, nbytes) -> int:
        if tensor is None:
            if nbytes is None:
                raise ValueError("nbytes: a size-only message (tensor=None) needs nbytes")
            if not self.virtual and nbytes:
                raise ValueError("tensor: size-only messages need an emulated network (virtual time)")
            return int(nbytes)
        if not tensor.is_contiguous():
            raise ValueError("tensor: must be contiguous (use .contiguous() or a slice of a 1-D tensor)")
        return nbytes_of(tensor)

    def isend(self, tensor: torch.Tensor | None, dst: int, nbytes: int | None = None) -> Request:
        """Post a send of `tensor` to rank `dst`; complete it with ``wait``."""
        self._check_peer(dst, "dst")
        n = self._size(tensor, nbytes)
        if tensor is not None and n == 0:
            tensor = None                        # an empty message: header only (it still costs alpha)
        handles, end = [], None
        if self._fabric is not None:                 # timed by the fabric when waited for
            start = self._clock
            seq = self._seq_out[dst]
            self._seq_out[dst] += 1
            self._fabric.send(dst, seq, start, n)
            packed = _header(start, n)
            handles.append(dist.isend(packed, dst, group=self.group, tag=self.tag))
        elif self.virtual:
            cls = self.network.link_class(self.rank, dst)
            duration = self.network.link(self.rank, dst).time(n)
            start = self._port(cls, "out").reserve(self._clock, duration)
            end = start + duration
            self._event("send", dst, n, start, end)
            if tensor is not None and n <= PACK_BYTES:             # header and payload in one message
                packed, tensor = _packed(start, n, tensor), None
            else:
                packed = _header(start, n)
            handles.append(dist.isend(packed, dst, group=self.group, tag=self.tag))
        else:
            start, packed = self.now(), None
        if tensor is not None:
            handles.append(dist.isend(tensor, dst, group=self.group, tag=self.tag))
        self.bytes_sent += n
        self.messages_sent += 1
        req = Request("send", dst, n, handles, end=end)
        req.start, req.buffer = start, packed                   # kept alive until the send completes
        if self._fabric is not None:
            req.seq, req.timed_by_fabric = seq, True
        return req

    def irecv(self, tensor: torch.Tensor | None, src: int, nbytes: int | None = None) -> Request:
        """Post a receive into `tensor` from rank `src`; complete it with ``wait``."""
        self._check_peer(src, "src")
        n = self._size(tensor, nbytes)
        if tensor is not None and n == 0:
            tensor = None
        handles, header, buf = [], None, None
        if self.virtual and self._fabric is None and tensor is not None and n <= PACK_BYTES:
            buf = torch.empty(_HEADER + n, dtype=torch.uint8)     # what _packed sends: header, then payload
            header = buf[:_HEADER].view(torch.float64)
            handles.append(dist.irecv(buf, src, group=self.group, tag=self.tag))
        else:
            if self.virtual:
                header = torch.empty(2, dtype=torch.float64)
                handles.append(dist.irecv(header, src, group=self.group, tag=self.tag))
            if tensor is not None:
                handles.append(dist.irecv(tensor, src, group=self.group, tag=self.tag))
        req = Request("recv", src, n, handles, header=header)
        if buf is not None:
            req.buffer = buf
            req._unpack = lambda: tensor.view(-1).view(torch.uint8).copy_(buf[_HEADER:])
        req.start = self.now()
        if self._fabric is not None:
            req.seq, req.timed_by_fabric = self._seq_in[src], True
            self._seq_in[src] += 1
        return req

    def wait(self, *requests: Request) -> None:
        """Complete requests in the order given; the clock moves to the latest completion."""
        if self._status is not None and requests:         # what a timeout will report for this rank
            req = next((r for r in requests if r.kind == "recv"), requests[0])
            more = f" (+{len(requests) - 1} more)" if len(requests) > 1 else ""
            self._status(f"waiting in {req.kind} {'to' if req.kind == 'send' else 'from'} rank {req.peer} "
                         f"({req.nbytes} B){more} at t={self.now():.6g}s")
        for req in requests:
            if req.done:
                continue
            if self._fabric is not None:
                self._fabric.post_wait(req.kind, req.peer, req.seq, self._clock)   # before blocking on data
                req._arrive()
                if req.kind == "recv" and int(req.header[1]) != req.nbytes:
                    raise RuntimeError(f"rank {self.rank}: recv from rank {req.peer} expected {req.nbytes} bytes "
                                       f"but rank {req.peer} sent {int(req.header[1])} bytes")
                begin, req.end = self._fabric.answer()
                self._event(req.kind, req.peer, req.nbytes, begin, req.end)
            elif self.virtual and req.kind == "recv":
                req._arrive(1)                             # the header: when and how much was sent
                start, sent = float(req.header[0]), int(req.header[1])
                if sent != req.nbytes:
                    raise RuntimeError(f"rank {self.rank}: recv from rank {req.peer} expected {req.nbytes} bytes "
                                       f"but rank {req.peer} sent {sent} bytes")
                cls = self.network.link_class(req.peer, self.rank)
                duration = self.network.link(req.peer, self.rank).time(sent)
                begin = self._port(cls, "in").reserve(start, duration)
                req.end = begin + duration
                req._arrive()
                self._event("recv", req.peer, sent, begin, req.end)
            else:
                req._arrive()
                if not self.virtual:
                    req.end = self.now()
                    self._event(req.kind, req.peer, req.nbytes, req.start, req.end)
            if self.virtual:
                self._clock = max(self._clock, req.end)
            if req.kind == "recv":
                self.bytes_recv += req.nbytes
                self.messages_recv += 1
            req.done = True
        self._set_status("")

    def send(self, tensor, dst, nbytes=None) -> None:
        self.wait(self.isend(tensor, dst, nbytes))

    def recv(self, tensor, src, nbytes=None) -> None:
        self.wait(self.irecv(tensor, src, nbytes))

    def sendrecv(self, send_tensor, dst, recv_tensor, src, send_nbytes=None, recv_nbytes=None) -> None:
        """Send to `dst` and receive from `src` at once (a ring step); deadlock-free in a cycle."""
        s = self.isend(send_tensor, dst, send_nbytes)
        r = self.irecv(recv_tensor, src, recv_nbytes)
        self.wait(s, r)

    # ---- computation ----------------------------------------------------------------
    @contextlib.contextmanager
    def compute(self, seconds: float | None = None, flops: float | None = None, label: str = "compute"):
        """``with comm.compute(flops=F): loss.backward()`` -- the body runs for real either way.

        Virtual time: the clock advances by the modelled duration (``seconds``, or ``flops`` over the
        device's peak times efficiency); the body's wall time does not count.
        Wall time: the measured duration counts (FLOPs are ignored); given ``seconds``, the rank sleeps
        out the rest of them.
        """
        modelled = self._modelled(seconds, flops)
        start = self.now()
        yield
        if self.virtual:
            self._clock += modelled
        elif seconds is not None:                   # an emulated compute phase: take as long as asked
            spare = seconds - (self.now() - start)
            if spare > 0:
                time.sleep(spare)
        self._event("compute", -1, 0, start, self.now(), label)

    def compute_for(self, seconds: float | None = None, flops: float | None = None, label: str = "compute"):
        """A compute phase with no body: advance the clock (or sleep) by a modelled duration."""
        with self.compute(seconds, flops, label):
            pass

    def _modelled(self, seconds, flops):
        if seconds is not None and flops is not None:
            raise ValueError("compute: give seconds or flops, not both")
        if seconds is not None:
            if not seconds >= 0:
                raise ValueError(f"seconds: must be zero or more, got {seconds!r}")
            return float(seconds)
        if flops is not None:
            if self.device is None:
                raise ValueError("flops: no device is set to turn FLOPs into time (pass device=...)")
            return self.device.seconds(flops)
        if self.virtual:
            raise ValueError("compute: under virtual time give seconds or flops (the body's wall time is not used)")
        return None

    def reduce_cost(self, nbytes: int) -> None:
        """Charge the reduction arithmetic of `nbytes` (gamma * n) to the clock; free unless gamma > 0."""
        if self.virtual and self.network.gamma:
            start = self._clock
            self._clock += self.network.gamma * nbytes
            self._event("compute", -1, 0, start, self._clock, "reduce")

    @contextlib.contextmanager
    def region(self, label: str):
        """Name a phase (``with comm.region('allreduce'):``); events inside carry the label."""
        start = self.now()
        self._labels.append(label)
        try:
            yield
        finally:
            self._labels.pop()
            self._event("region", -1, 0, start, self.now(), label)
