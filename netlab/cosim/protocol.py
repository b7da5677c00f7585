"""The line between a run's coordinator (``live.Coordinator``) and its ranks: what a rank reports, and
the spec the ranks are given.

A rank's ``FabricClient`` sends its reports over the run's private Unix socket (the protocol is in
``live.py``'s docstring): ``("hello", rank)`` once, then ``("send", dst, seq, start, nbytes)``,
``("wait", kind, peer, seq, clock)``, ``("any", [(peer, seq), ...], clock)``, ``("data", peer, seq, clock)``,
``("restart",)`` and ``("done",)``; the coordinator answers a wait with ``(begin, end)``, a wait on several
receives with ``(peer, seq)``, or a string naming why the fabric failed. ``launched`` puts the user's
``Congestion`` or ``FlowFabric`` on the line: the socket's address and key travel with it to every rank.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from multiprocessing.connection import Client

from ..fabric.congestion import Congestion
from .flows import FlowFabric


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


# ---- the spec the ranks receive --------------------------------------------------------------------
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

