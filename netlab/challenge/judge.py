"""Judge one challenge entry on real ranks: is the sum right, how long did it take on the task's fabric.

An entry is ``allreduce(comm, x)``, run on every one of the task's ranks at once (as exercise 2's ring):
`x` is this rank's float32 tensor of the task's size; when it returns, every rank's `x` (or the tensor
it returns) must hold the element-wise sum of every rank's x. It moves data with ``comm``'s
point-to-point calls only, and may use the lab's blocks built on them (``netlab.collectives``,
``collectives.schedule.execute``, ...).

What the judge does, on each rank:
1. draws the rank's input, uniform in [-1, 1), from fresh entropy of its own (``os.urandom``): no rank
   can know another's input without receiving it (with ``seed=`` given, from that seed instead);
2. computes the reference with torch's own ``dist.all_reduce`` on a copy, outside the entry's time;
3. runs the entry under a watch (``Watch``) that stops it, naming the call, as soon as it calls into
   ``torch.distributed`` other than through ``comm`` (``dist.all_reduce``, ``dist.isend`` around comm's
   clock, a process group's own methods), whether directly or through any other code;
4. compares: every element within 2 p (p - 1) u of the reference (u = 2^-24, float32's unit roundoff;
   inputs in [-1, 1) keep the sum of |x| under p, and two summation orders of p numbers differ by at
   most 2 (p - 1) u times it), so any order of additions passes and a result that went through fp16 or
   bf16 does not.

The score is the virtual time at which the task's fabric delivered the entry's last message
(``cosim.flows``, ``FlowFabric(causal=True)``: a rank's sends may not start before its own clock had
reached, so no entry gains by rewriting its clock). The fabric is deterministic, so the same entry gets
the same score on any machine, idle or loaded, and whatever its inputs.

Verdicts: ``ok``; ``wrong result``; ``built-in collective`` (the watch stopped it); ``deadlock`` (every
unfinished rank waits in comm after the ranks' time limit); ``timeout`` (some rank still computing);
``error`` (a rank raised, or the fabric refused a send); and, from the sandbox (``board.py``),
``crashed``, ``timeout`` and ``no entry``.

What it does not do: stop a program that deliberately moves data outside torch.distributed (files,
shared memory, sockets) or rewrites the judge in its own process. Like every public leaderboard
(CS336's staff re-run and read the top entries), read the code of the entries at the top.
"""
from __future__ import annotations

import os
import sys

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .. import seeds
from ..runtime import errors, launch, memory, shared
from .tasks import Task, task as task_of

CHALLENGE_STREAM = 10          # seeds.py's streams: the challenge's inputs, per rank (with seed= only)
UNIT_ROUNDOFF = 2.0 ** -24
# Elements compared with the reference at a time: the whole 16 MiB input at once in float64 took three
# float64 copies (64 MiB) per rank, 2 GB over 32 ranks, beside the tensors themselves.
COMPARE_CHUNK = 1 << 18
# Tensors one judging rank holds at once, in messages of the task's size: the input and the temporaries
# that make it, torch's reference, the entry's result and working buffers, gloo's. Measured: judging the
# 16 MiB task's baselines on 32 ranks raised a memory cgroup's peak by 4.0-4.1 GB with the fork server
# (tests/test_challenge_board.py), about 120 MB a rank: the 27 MB of a light rank and 5.6 messages.
# 8 keeps the estimate (5.4 GB) 1.3x above it.
JUDGE_COPIES = 8


def rank_bytes(t: Task) -> float:
    """The memory check's estimate of one judging rank of task `t` (``memory.rank_bytes``)."""
    return memory.rank_bytes(t.nbytes, JUDGE_COPIES, memory.LIGHT_RANK_BASE)


_RUNTIME = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime") + os.sep


class ForbiddenCall(BaseException):
    """The entry called into torch.distributed other than through comm (a BaseException: not caught by
    an ``except Exception`` in the entry)."""


class Watch:
    """``Watch(fn)(comm, x)``: run `fn`, stopping it at its first call into torch.distributed that does not
    come through netlab's runtime (``comm``). A class with ``__call__`` so that it pickles by reference."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        dist_dir = os.path.join(torch_dir, "distributed") + os.sep
        hits: list[str] = []

        def through_comm(frame) -> bool:
            """Is the nearest frame outside torch (from `frame` outwards) netlab's runtime?"""
            f = frame
            while f is not None and f.f_code.co_filename.startswith(torch_dir):
                f = f.f_back
            return f is not None and f.f_code.co_filename.startswith(_RUNTIME)

        def profile(frame, event, arg):
            if event == "call":
                if frame.f_code.co_filename.startswith(dist_dir) and not through_comm(frame.f_back):
                    name = frame.f_code.co_name
                    wrapped = frame.f_locals.get("func") if name == "wrapper" else None    # c10d's logging decorator
                    hits.append(f"torch.distributed.{getattr(wrapped, '__name__', name)}")
                    raise ForbiddenCall(hits[0])
            elif event == "c_call":
                owner = getattr(arg, "__self__", None)
                module = getattr(type(owner), "__module__", "") or ""
                if module.startswith("torch._C._distributed") and not through_comm(frame):
                    hits.append(f"{type(owner).__name__}.{getattr(arg, '__name__', '?')}")
                    raise ForbiddenCall(hits[0])

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            out = self.fn(*args)
        finally:
            sys.setprofile(previous)
        if hits:                                     # it caught our stop and went on: still forbidden
            raise ForbiddenCall(hits[0])
        return out


def tolerance(p: int) -> float:
    """Largest difference allowed from torch's sum of p inputs in [-1, 1) (see the module's docstring)."""
    return 2 * p * (p - 1) * UNIT_ROUNDOFF * 1.01 + 1e-30


def _input(comm, count: int, seed):
    if seed is None:
        g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    else:
        g = seeds.torch_generator(seed, CHALLENGE_STREAM, comm.rank)
    return torch.empty(count, dtype=torch.float32).uniform_(-1, 1, generator=g)     # rand() * 2 - 1, bit for bit


def _trial(comm, fn, count: int, seed):
    p = comm.world_size
    x = _input(comm, count, seed)
    expected = x.clone()
    dist.all_reduce(expected, group=comm.group)             # the reference: torch's own collective
    returned = Watch(fn)(comm, x)
    got = returned if isinstance(returned, torch.Tensor) else x
    got = got.detach().reshape(-1)
    if got.numel() != count:
        return {"wrong": f"rank {comm.rank} returned {got.numel():,} elements, expected {count:,}"}
    wrong, first = 0, None
    tol = tolerance(p)
    sure = tol * (1 - 2.0 ** -20)           # |g - e| in float32 at most this: within tol exactly (see below)
    for start in range(0, count, COMPARE_CHUNK):
        g, e = got[start:start + COMPARE_CHUNK], expected[start:start + COMPARE_CHUNK]
        # One float32 pass finds the elements that could be out: float32's difference of two float32s and
        # the bound in float32 are each within u of exact, so below `sure` the exact |g - e| is below tol.
        # Those few (none, for a right answer), and NaN and inf, are decided exactly, in float64.
        suspect = ~(torch.sub(g, e).abs_() <= sure)
        if not bool(suspect.any()):
            continue
        at = suspect.nonzero().view(-1)
        gs = g[at]
        bad = at[((gs.to(torch.float64) - e[at].to(torch.float64)).abs() > tol) | ~torch.isfinite(gs)]
        if bad.numel() and first is None:
            first = start + int(bad[0])
        wrong += bad.numel()
    if wrong:
        return {"wrong": f"rank {comm.rank}: {wrong:,} of {count:,} elements differ from dist.all_reduce's "
                         f"sum (the first is element {first:,})"}
    return {}


def _failure(exc, timeout: float) -> tuple[str, str]:
    """(verdict, message) of a run that did not finish."""
    if isinstance(exc, errors.RankTimeout):
        lines = [ln.strip() for ln in str(exc).splitlines()[1:] if ln.strip()]
        busy = [ln for ln in lines if "busy" in ln]
        if busy or not lines:
            return "timeout", (f"the ranks did not finish within {timeout:g} s of wall time and "
                               f"{len(busy)} were still computing ({'; '.join(busy[:2])})")
        return "deadlock", (f"the ranks did not finish within {timeout:g} s, every unfinished one waiting in comm: "
                            + "; ".join(lines[:3]) + (f"; +{len(lines) - 3} more" if len(lines) > 3 else ""))
    if exc.exc_type == "ForbiddenCall":
        return "built-in collective", (f"calls {exc.remote_message}: the entry must move its data with comm's "
                                       "point-to-point calls (and the lab's blocks built on them)")
    if exc.exc_type == "RankDied":
        return "error", f"rank {exc.rank} died: it {exc.remote_message}"
    return "error", f"rank {exc.rank} raised {exc.exc_type}: {exc.remote_message[:300]}"


def link_table(t: Task, link_bytes, seconds: float) -> list[dict]:
    """Per link: label, kind, bytes carried, utilisation over the entry's time (bytes / (capacity x time))."""
    topo = t.topology()
    out = []
    for i, b in enumerate(link_bytes):
        util = b / (topo.capacity[i] * seconds) if seconds > 0 else 0.0
        out.append({"link": topo.link_label(i), "kind": topo.kind_of(i), "bytes": int(round(b)),
                    "utilisation": round(float(util), 6)})
    return out


def judge(t, fn, seed: int | None = None) -> dict:
    """Run entry `fn` on the task's real ranks; the verdict, the score and each link's utilisation."""
    t = task_of(t)
    try:
        shared.check_memory(t.ranks, rank_bytes(t), f"judging this entry on {t.ranks} ranks")
    except memory.NotEnoughMemory as exc:
        return {"verdict": "no memory", "message": exc.reason}
    try:
        res = launch.run(_trial, fn, t.count, seed, ranks=t.ranks, network=t.network(), timeout=t.rank_timeout_s)
    except (errors.RankTimeout, errors.RankError) as exc:
        verdict, message = _failure(exc, t.rank_timeout_s)
        return {"verdict": verdict, "message": message}
    wrong = next((v["wrong"] for v in res.values if v.get("wrong")), None)
    if wrong:
        return {"verdict": "wrong result", "message": wrong}
    fab = res.fabric or {}
    seconds = float(fab.get("last_delivery", 0.0))
    if seconds <= 0:
        return {"verdict": "wrong result", "message": "no message was sent: the ranks cannot have summed anything"}
    algbw = t.nbytes / seconds / 1e9
    busbw = algbw * 2 * (t.ranks - 1) / t.ranks
    return {"verdict": "ok", "message": "", "time_s": seconds,
            "algbw_GBps": algbw, "busbw_GBps": busbw, "messages": int(fab.get("flows", 0)),
            "links": link_table(t, fab.get("link_bytes", []), seconds)}
