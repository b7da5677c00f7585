"""What rank code calls to communicate: send/recv/sendrecv and compute, with a clock and a trace.

Tensors really move between processes through torch.distributed (gloo); only the clock is chosen
(``clock.py``): virtual time when a ``Network`` is given -- exact and deterministic, the same
program gives the same times on any machine, idle or loaded -- or the wall clock without one (on a
real cluster under torchrun, or on the machine's own loopback). The same events are recorded.

Every operation appends an event (rank, kind, peer, bytes, start, end, label) to ``comm.events``.
Size-only messages (``tensor=None, nbytes=n``) move only the header: the timing of a 256 MB
message without 256 MB of memory, for sweeps; the virtual times are identical to a real payload's.

Left out: how time is kept (``clock.py``) and collectives (``netlab.collectives``, built on these calls).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .. import validate
from ..net.network import Network
from ..net.presets import Device
from .clock import PACK_BYTES, clock_for, nbytes_of  # noqa: F401  (PACK_BYTES: read by tests and benchmarks)


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

    def __init__(self, kind: str, peer: int, nbytes: int, handles: list, *, header=None, end=None, label=""):
        self.kind, self.peer, self.nbytes, self.handles = kind, peer, nbytes, handles
        self.header, self.end, self.label, self.done = header, end, label, False
        self._moved = 0                              # handles whose transport has completed
        self.buffer = None                           # a packed message (header + payload) in flight
        self._unpack = None                          # copies a packed payload into the caller's tensor

    def arrive(self, upto: int | None = None) -> None:
        before = getattr(self, "before_arrive", None)    # a congestion fabric: report the block first
        if before is not None and self._moved < (len(self.handles) if upto is None else upto):
            before(self)
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


class Comm:
    """One rank's view: ``rank``, ``world_size``, point-to-point calls, ``compute``, ``now()``."""

    def __init__(self, rank: int, world_size: int, network: Network | None = None,
                 device: Device | None = None, *, tag: int = 0, status=None, group=None):
        self.rank, self.world_size = rank, world_size
        self.network, self.device, self.tag, self.group = network, device, tag, group
        self.events: list[Event] = []
        self.bytes_sent = self.bytes_recv = self.messages_sent = self.messages_recv = 0
        self._status = status                     # shared buffer the launcher reads on a timeout
        self._labels: list[str] = []
        self.clock = clock_for(network, rank=rank, record=self._event)   # clock.py: virtual, fabric or wall

    @property
    def virtual(self) -> bool:
        """True when a network is emulated (virtual time), False on the wall clock."""
        return self.clock.virtual

    def finish(self) -> None:
        """The run is over on this rank (the launcher calls it): let the fabric stop waiting for it."""
        self.clock.finish()

    # ---- the clock -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the run began: virtual time if a network is emulated, else wall time."""
        return self.clock.now()

    def restart_clock(self) -> None:
        """Start the clock again from zero with idle ports (a benchmark's next size, say)."""
        self.clock.restart()

    def _event(self, kind, peer, nbytes, *, start, end, label=None):
        label = label if label is not None else (self._labels[-1] if self._labels else "")
        self.events.append(Event(rank=self.rank, kind=kind, peer=peer, bytes=int(nbytes), start=start, end=end,
                                 label=label))

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
            self.clock.check_size_only(nbytes)
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
        req = Request("send", dst, n, [])
        packed, tensor = self.clock.post_send(req, tensor)     # stamps the send; the header goes first
        if packed is not None:
            req.handles.append(dist.isend(packed, dst, group=self.group, tag=self.tag))
        if tensor is not None:
            req.handles.append(dist.isend(tensor, dst, group=self.group, tag=self.tag))
        self.bytes_sent += n
        self.messages_sent += 1
        req.buffer = packed                                     # kept alive until the send completes
        return req

    def irecv(self, tensor: torch.Tensor | None, src: int, nbytes: int | None = None) -> Request:
        """Post a receive into `tensor` from rank `src`; complete it with ``wait``."""
        self._check_peer(src, "src")
        n = self._size(tensor, nbytes)
        if tensor is not None and n == 0:
            tensor = None
        req = Request("recv", src, n, [])
        for buf in self.clock.recv_buffers(req, tensor):        # header (and payload), as the sender sends them
            req.handles.append(dist.irecv(buf, src, group=self.group, tag=self.tag))
        req.start = self.now()
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
            self.clock.complete(req)
            if req.kind == "recv":
                self.bytes_recv += req.nbytes
                self.messages_recv += 1
            req.done = True
        self._set_status("")

    def wait_first(self, *requests: Request) -> Request:
        """Complete whichever posted receive is delivered first in virtual time, and return it.

        Only a packet fabric (``comm.clock.arrivals``) can tell: it answers once no message still in
        flight or unsent can arrive earlier (ties: the lower sending rank, then the earlier message)."""
        if self._status is not None and requests:
            self._status(f"waiting for the first of {len(requests)} receives at t={self.now():.6g}s")
        if not self.clock.arrivals:
            raise ValueError("requests: the first of several messages to arrive needs a packet fabric "
                             "(network=netlab.network(..., congestion=Congestion('reno', ...)))")
        first = self.clock.first(list(requests))
        self.wait(first)
        return first

    def send(self, tensor, dst, nbytes=None) -> None:
        self.wait(self.isend(tensor, dst, nbytes))

    def recv(self, tensor, src, nbytes=None) -> None:
        self.wait(self.irecv(tensor, src, nbytes))

    def sendrecv(self, send_tensor, dst, recv_tensor, src, *, send_nbytes=None, recv_nbytes=None) -> None:
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
        self.clock.computed(start, modelled, seconds)
        self._event("compute", -1, nbytes=0, start=start, end=self.now(), label=label)

    def compute_for(self, seconds: float | None = None, flops: float | None = None, label: str = "compute"):
        """A compute phase with no body: advance the clock (or sleep) by a modelled duration."""
        with self.compute(seconds, flops, label):
            pass

    def _modelled(self, seconds, flops):
        if seconds is not None and flops is not None:
            raise ValueError("compute: give seconds or flops, not both")
        if seconds is not None:
            return validate.number(seconds, "seconds", 0)
        if flops is not None:
            if self.device is None:
                raise ValueError("flops: no device is set to turn FLOPs into time (pass device=...)")
            return self.device.seconds(flops)
        return self.clock.unmodelled()

    def reduce_cost(self, nbytes: int) -> None:
        """Charge the reduction arithmetic of `nbytes` (gamma * n) to the clock; free unless gamma > 0."""
        self.clock.reduce_cost(nbytes)

    @contextlib.contextmanager
    def region(self, label: str):
        """Name a phase (``with comm.region('allreduce'):``); events inside carry the label."""
        start = self.now()
        self._labels.append(label)
        try:
            yield
        finally:
            self._labels.pop()
            self._event("region", -1, nbytes=0, start=start, end=self.now(), label=label)
