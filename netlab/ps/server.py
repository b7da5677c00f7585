"""A parameter server for dense parameters: holds its chunks, applies pushes in a fixed order, answers pulls.

Follows ps-lite's ``KVServer`` with a request handle that updates the stored values (Li et al.,
OSDI 2014): a push of chunk c is a gradient; the server updates its copy of c with SGD and
momentum, bumps c's version, and answers with the fresh values (the pull). Consistency (see
``consistency.py``): under BSP the pushes of a step are summed in worker-rank order and applied
once; under ASP and SSP each push is applied when it is taken, and SSP holds a worker's answer
until the slowest worker is close enough.

The order of pushes is decided in virtual time, never by when messages happen to arrive in wall
time (that depends on the machine's load). On the port model and the wall clock the server keeps
one posted receive per worker and takes the pending message with the smallest key
(``messages.py``) once every worker that could still send it an earlier one has a message pending.
A worker is excused when it cannot send: it has finished, or it is waiting for an answer this
server holds (any later message of it then leaves after the answer, so after everything the server
takes meanwhile).

Why this cannot deadlock. Take, among all sent but untaken messages, the one m whose worker w
started its push phase earliest (ties: lower rank), and its server S. If S were stuck, it would
wait for some worker x with nothing pending at S and no answer held there: x's whole step is taken
at S, so its last chunk there had a smaller key than m; keys are start + offset with offsets common
to all workers, so x started before w. x waits for another server S': either for its own untaken
message there (which started before m's: contradiction) or for an answer S' holds for the
slowest worker u's push of some step; S already took u's push of that step, with a key below m's,
so u started before w too, and its untaken push contradicts the choice of m. Requires every worker
to send all chunks of a step before waiting, in the same order and sizes (true for dense
parameters on workers that are not also servers).

On a packet fabric (``comm.clock.arrivals``: a congestion ``network`` other than the ideal
transport with unlimited buffers) the server takes pushes in the order the fabric delivers them,
as a real asynchronous server does: ``comm.wait_first`` over the posted receives of the workers
not excused returns the one delivered first in virtual time (ties: lower rank, then the earlier
message) once nothing in flight or unsent can arrive earlier; the push is taken at max(server
clock, its arrival) and its answers leave then. Key order there would answer a fast worker at its
push's time after having seen a later push: a send into the fabric's past, which a conservative
simulation cannot take back (``netlab/cosim/live.py``). Nor can this deadlock: were every server
to wait for ever, take the stuck worker x with the lowest step t; it waits for an answer of step t
from some server S. If S has not taken x's push, x owes S nothing, so S waits on it and the
fabric delivers it. If S holds the answer, some worker y's clock at that chunk is at most t; y,
stuck at a step >= t, has sent that push, S has not taken it, y owes S nothing: the same. Under
BSP the order of takes changes no sum (pushes are summed in rank order).

Left out: server-side replication and fault tolerance (ps-lite's is in the paper, not the code);
a server's arithmetic costs only ``network.gamma`` per byte summed (0 by default).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from netlab.lazy import lazy
torch = lazy("torch", globals())

from . import messages
from .config import PSConfig


@dataclass
class ServerState:
    """Everything a server holds; save it, and a new server started from it continues exactly."""
    values: dict                       # chunk index -> fp32 tensor (the parameters)
    momentum: dict                     # chunk index -> fp32 tensor (velocity)
    version: dict                      # chunk index -> updates applied
    applied: dict                      # chunk index -> sum of every gradient applied (the elastic check)
    records: list = field(default_factory=list)  # (worker, step, chunk, staleness) per applied push
    gaps: list = field(default_factory=list)     # per answer: steps ahead of the slowest when released

    def copy(self) -> "ServerState":
        clone = lambda d: {k: v.clone() for k, v in d.items()}  # noqa: E731
        return ServerState(values=clone(self.values), momentum=clone(self.momentum), version=dict(self.version),
                           applied=clone(self.applied), records=list(self.records), gaps=list(self.gaps))


def initial_state(chunks, init_flat: torch.Tensor) -> ServerState:
    values = {c.index: init_flat[c.offset:c.offset + c.length].clone() for c in chunks}
    zeros = lambda: {c.index: torch.zeros(c.length) for c in chunks}  # noqa: E731
    return ServerState(values, zeros(), {c.index: 0 for c in chunks}, zeros())


class DenseServer:
    def __init__(self, comm, cfg: PSConfig, server: int, init_flat: torch.Tensor):
        self.comm, self.cfg, self.server = comm, cfg, server
        self.chunks = cfg.smap.of_server(server)                 # in chunk order: the workers' send order
        restored = cfg.restore[server] if cfg.restore is not None else None
        self.state = restored.copy() if restored is not None else initial_state(self.chunks, init_flat)
        self.workers = range(cfg.roles.workers)
        self.next = {w: (s.start, 0) if (s := cfg.steps_of(w)) and self.chunks else None for w in self.workers}
        self.held = {w: 0 for w in self.workers}                 # answers owed before w can start a step
        self.clocks = {c.index: {w: cfg.steps_of(w).start for w in self.workers} for c in self.chunks}
        self.waiting = {c.index: [] for c in self.chunks}        # SSP: (worker, step) answers on hold
        self.pushes = {c.index: {} for c in self.chunks}         # BSP: worker -> gradient of this step
        self.outbox = collections.deque()                        # answers in flight (requests, buffers)
        self.posted = {}                                         # worker -> its next message (request, buffer)
        self.keys = {}                                           # worker -> (key, rank, chunk) once it is here
        self.arrivals = comm.clock.arrivals                      # a packet fabric: take pushes as they land

    # ---- the loop ---------------------------------------------------------------------------
    def serve(self) -> ServerState:
        for w in self.workers:
            if self.next[w] is not None and self.cfg.initial_pull(w):
                self.held[w] = len(self.chunks)
        for c in self.chunks:                                    # resumed run: everyone pulls first
            for w in self.workers:
                steps = self.cfg.steps_of(w)
                if self.next[w] is not None and steps.start == self.cfg.start > 0:
                    self._answer(w, c, self.cfg.start - 1, gap=None)
        for w in self.workers:
            if self.next[w] is not None:
                self._post(w)
        while any(n is not None for n in self.next.values()):
            ready = [w for w in self.workers if self.next[w] is not None and not self._excused(w)]
            if not ready:
                raise RuntimeError(f"server {self.server}: every worker still training waits for an answer this server "
                                   f"holds back -- does the SSP wait condition ever let a worker go?")
            if self.arrivals:                                    # the push the fabric delivers first
                first = self.comm.wait_first(*[self.posted[w][0] for w in ready])
                w = next(w for w in ready if self.posted[w][0] is first)
            else:
                for w in ready:
                    if w not in self.keys:
                        messages.arrived(self.posted[w][0])      # wall-clock wait; decides nothing
                        self.keys[w] = (messages.header(self.posted[w][1])[0], w, self.next[w][1])
                w = min(ready, key=self.keys.__getitem__)
            self._take(w)
            self._reap()
        for req, _ in self.outbox:
            messages.arrived(req)
        return self.state

    def _excused(self, w: int) -> bool:
        """w cannot send this server anything until it gets answers this server still owes it."""
        return self.next[w][1] == 0 and self.held[w] > 0

    def _post(self, w: int) -> None:
        step, pos = self.next[w]
        buf = messages.empty(self.chunks[pos].length)
        self.posted[w] = (self.comm.irecv(buf, self.cfg.roles.worker_rank(w)), buf)
        self.keys.pop(w, None)

    def _take(self, w: int) -> None:
        req, buf = self.posted.pop(w)
        self.comm.wait(req)                                      # books the NIC, moves the clock
        key, step, version, flags = messages.header(buf)
        expected_step, pos = self.next[w]
        if step != expected_step:
            raise RuntimeError(f"server {self.server}: worker {w} pushed step {step}, expected {expected_step}")
        chunk = self.chunks[pos]
        grad = messages.values(buf)
        self.comm.reduce_cost(4 * chunk.length)
        if pos + 1 < len(self.chunks):
            self.next[w] = (step, pos + 1)
        elif step + 1 < self.cfg.steps_of(w).stop:
            self.next[w] = (step + 1, 0)
        else:
            self.next[w] = None
        self.held[w] += 1                                        # w's answer for this chunk is now owed
        if self.cfg.mode == "bsp":
            self._bsp(w, step, chunk=chunk, grad=grad.clone(), version=version)
        else:
            self._apply(chunk, grad, workers=w, step=step, versions=version)
            self.clocks[chunk.index][w] = step + 1
            self.waiting[chunk.index].append((w, step))
            self._release(chunk)
        if self.next[w] is not None:
            self._post(w)

    # ---- consistency ------------------------------------------------------------------------
    def _bsp(self, w, step, chunk, grad, version) -> None:
        pushes = self.pushes[chunk.index]
        pushes[w] = (grad, version)
        members = self.cfg.members(step)
        if len(pushes) < len(members):
            return
        total = torch.zeros(chunk.length)
        for u in members:                                        # rank order: the same sum on every run
            total += pushes[u][0]
        self._apply(chunk, total, workers=members, step=step, versions=[pushes[u][1] for u in members])
        pushes.clear()
        for u in self.cfg.membership.recipients(step):
            self._answer(u, chunk, step, gap=0)

    def _release(self, chunk) -> None:
        """SSP/ASP: answer every held worker the wait condition now lets go (in the order they came)."""
        live = self._live_clocks(chunk)
        still = []
        for w, step in self.waiting[chunk.index]:
            if step + 1 == self.cfg.steps_of(w).stop:            # w's last push: no next step to hold back
                self._answer(w, chunk, step, gap=None)
            elif self.cfg.ready(step, live, self.cfg.staleness):
                self._answer(w, chunk, step, gap=step + 1 - min(live))
            else:
                still.append((w, step))
        self.waiting[chunk.index] = still

    def _live_clocks(self, chunk) -> list:
        """Steps pushed of this chunk, for every worker that still has steps to push."""
        clocks = self.clocks[chunk.index]
        return [clocks[w] for w in self.workers if clocks[w] < self.cfg.steps_of(w).stop]

    # ---- state changes and messages ---------------------------------------------------------
    def _apply(self, chunk, grad, workers, step, versions) -> None:
        """SGD with heavy-ball momentum on one chunk; record each contribution's staleness."""
        s, i = self.state, chunk.index
        workers = workers if isinstance(workers, list) else [workers]
        versions = versions if isinstance(versions, list) else [versions]
        for w, v in zip(workers, versions):
            s.records.append((w, step, i, s.version[i] - v))
        s.applied[i] += grad
        if self.cfg.momentum:
            s.momentum[i].mul_(self.cfg.momentum).add_(grad)
            s.values[i].sub_(self.cfg.lr * s.momentum[i])
        else:
            s.values[i].sub_(self.cfg.lr * grad)
        s.version[i] += 1

    def _answer(self, w, chunk, step, gap) -> None:
        """Send w the chunk's current values (its pull), as of now on this server's clock."""
        self.held[w] -= 1                                        # owed since w's push (or its joining)
        if gap is not None:
            self.state.gaps.append(gap)
        buf = messages.pack(self.state.values[chunk.index], chunk.length, 0, step,
                            version=self.state.version[chunk.index])
        self.outbox.append((self.comm.isend(buf, self.cfg.roles.worker_rank(w)), buf))

    def _reap(self) -> None:
        """Keep at most 128 answers in flight (their time was booked when they were sent).

        Waiting for an old answer cannot deadlock: its worker posted the receive right after its push.
        """
        while len(self.outbox) > 128:
            messages.arrived(self.outbox.popleft()[0])
