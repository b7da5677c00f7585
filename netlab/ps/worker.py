"""The worker's side of push and pull: send every chunk's gradient to its server, get fresh values back.

ps-lite's ``KVWorker::Push`` then ``Pull`` (BytePS: push then pull per partition). One step:

    t0 = clock after compute
    for each chunk c, round robin over servers:  push [header | grad[c]] to server(c)  # NIC: back to back
    for each chunk c, in the same order:         pull [header | values[c]] from server(c)
    wait for all of them                # the pulls arrive as the servers answer, chunk by chunk

All pushes of a step are posted before any wait, so a server can answer chunk c while the worker's
NIC is still sending chunk c+1: push and pull overlap, as BytePS's partitions make them.
Bytes per step: every worker sends M and receives M (+ 32 bytes of header per chunk).
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())

from . import messages
from .config import PSConfig


class PSClient:
    def __init__(self, comm, cfg: PSConfig, worker: int):
        self.comm, self.cfg, self.worker = comm, cfg, worker
        self.chunks = cfg.smap.send_order()              # round robin over the servers
        self.peers = [cfg.roles.server_rank(c.server) for c in self.chunks]
        self.offsets = messages.send_offsets(comm, [c.length for c in self.chunks], self.peers)
        self.version = [0] * len(self.chunks)          # of the values this worker computes on
        self.comm_s: list[float] = []                  # per step: push start -> last pull in

    def _pulls(self):
        posted = []
        for c, peer in zip(self.chunks, self.peers):
            buf = messages.empty(c.length)
            posted.append((self.comm.irecv(buf, peer), buf))
        return posted

    def _assemble(self, posted, step: int) -> torch.Tensor:
        flat = torch.empty(self.cfg.smap.numel)
        for i, (c, (_, buf)) in enumerate(zip(self.chunks, posted)):
            _, got_step, version, _ = messages.header(buf)
            if got_step != step:
                raise RuntimeError(f"worker {self.worker}: pulled step {got_step} of chunk {c.index}, expected {step}")
            self.version[i] = version
            flat[c.offset:c.offset + c.length] = messages.values(buf)
        return flat

    def pull(self, step: int) -> torch.Tensor:
        """Fetch the current parameters (a worker joining, or a resumed run): the answers of `step`."""
        posted = self._pulls()
        self.comm.wait(*[r for r, _ in posted])
        return self._assemble(posted, step)

    def push_pull(self, grad: torch.Tensor, step: int, last: bool = False, pull: bool = True) -> torch.Tensor | None:
        """Push this step's gradient (flat fp32), then pull the servers' fresh parameters (flat fp32)."""
        start = self.comm.now()
        base = messages.to_ps(start)
        flags = messages.LAST if last else 0
        sends = []
        for i, (c, peer) in enumerate(zip(self.chunks, self.peers)):
            buf = messages.pack(grad[c.offset:c.offset + c.length], c.length, base + self.offsets[i],
                                step, version=self.version[i], flags=flags)
            sends.append((self.comm.isend(buf, peer), buf))
        posted = self._pulls() if pull else []
        self.comm.wait(*[r for r, _ in sends], *[r for r, _ in posted])
        self.comm_s.append(self.comm.now() - start)
        return self._assemble(posted, step) if pull else None
