"""Exercise 1: predict a data-parallel step's time before the ranks measure it.

The student writes ``predict_step_time(compute_s, grad_bytes, ranks, bandwidth, latency)``
(bandwidth in bytes/s, latency in s) for a step that computes, then sums gradients with a ring
all-reduce. The check measures real steps on real ranks over several networks (one node among
them: it does not communicate) and compares, within 1 %.

The cases are chosen so that every term of the step matters in most of them: the compute, the
latency the ring's messages pay one after another, and the bytes each rank sends are each at least
5 % of the step wherever the ranks communicate, so a model with one term missing, halved or doubled
misses by more than the tolerance; and a tree-like latency (growing like log p) or one pass of
the ring's latency ((p - 1) messages) misses on most cases (``tests/test_wrong_answers_ch1.py``
proves both).

A wrong answer is then taken apart, on the case with the most ranks among those it gets wrong: the
check calls it with the gradient and the latency set to zero (the compute alone), with only the
latency, and with only the bytes, and says which term is off, what the ring needs there, and, where
the answer's value has a recognisable shape (1000 times, 8 times, log p, one phase), what that
suggests -- never the formula.
"""
from __future__ import annotations

import functools
import math

from . import CheckResult, Guard, call_student

CASES = [  # (ranks, bandwidth, latency, MLP width): each term >= 5 % of the step where p > 1
    (1, "10Gbit/s", "5us", 256),
    (2, "10Gbit/s", "20us", 256),
    (4, "2.5Gbit/s", "50us", 128),
    (5, "25Gbit/s", "10us", 128),
    (6, "10Gbit/s", "20us", 128),
    (8, "100Gbit/s", "5us", 256),
]
TERM_SHARE = 0.05        # the least share of the step each of compute, latency and bandwidth has (p > 1)


@functools.lru_cache(maxsize=128)
def measure(ranks: int, bandwidth: str, latency: str, width: int) -> tuple[float, int, float]:
    """(compute_s, grad_bytes, measured step s) of one step on real ranks (virtual time: the same every run)."""
    from ..dataparallel.step import measure_step
    r = measure_step(ranks=ranks, bandwidth=bandwidth, latency=latency, width=width)
    return r.compute_s, r.grad_bytes, r.total_s


def estimated_compute(width: int, layers: int = 2, batch: int = 32) -> float:
    """The compute of ``measure``'s step before it runs (matrix products of forward and backward, no input
    gradient, and the SGD update, on the cpu-core preset): for choosing cases, never for judging them."""
    from ..dataparallel import train
    from ..net.presets import DEVICES
    weights = 64 * width + (layers - 1) * width * width + 10 * width
    flops = 6 * batch * weights - 2 * batch * 64 * width + 2 * train.parameter_count(width, layers)
    return flops / (DEVICES["cpu-core"][0] * 0.5)


def shares(case, compute_s: float | None = None) -> tuple[float, float, float]:
    """(compute, latency, bandwidth) shares of one case's step (estimated compute unless `compute_s` is given)."""
    from ..dataparallel import train
    from ..units import parse_bandwidth, parse_time
    ranks, bw, lat, width = case
    c = estimated_compute(width) if compute_s is None else compute_s
    t = terms(c, train.grad_bytes(width), ranks, parse_bandwidth(bw), latency=parse_time(lat))
    return tuple(x / sum(t) for x in t)


def terms(compute_s, grad_bytes, ranks, bandwidth, *, latency) -> tuple[float, float, float]:
    """(compute, latency term, bandwidth term) of the ring step, in seconds (``netlab.collectives.cost``'s ring)."""
    from ..collectives import cost
    from ..net.network import Link
    if ranks == 1:
        return compute_s, 0.0, 0.0
    return (compute_s, cost.ring_allreduce(ranks, 0, Link(bandwidth, latency)),
            cost.ring_allreduce(ranks, grad_bytes, Link(bandwidth, 0.0)))


def _close(a, b, rel=0.005) -> bool:
    return abs(a - b) <= rel * abs(b) + 1e-15


def _us(seconds) -> str:
    return f"{seconds * 1e6:,.4g} us"


def _shape(term: str, got: float, want: float, ranks: int, latency: float) -> str:
    """What the answer's value for one term looks like, if it has a shape students often give it."""
    if _close(got, 0.0, 0) or abs(got) < 1e-3 * want:
        return f"the {term} is missing"
    ratio = got / want
    if term == "compute" and _close(ratio, 1000, 0.01):
        return "it is 1000 times too large: return seconds, not milliseconds"
    if _close(ratio, 1000, 0.01):
        return "it is 1000 times too large: seconds, not milliseconds"
    if term == "latency term":
        count = got / latency
        logs = {2 * math.log2(ranks), math.log2(ranks), 2 * math.ceil(math.log2(ranks)), math.ceil(math.log2(ranks))}
        if _close(count, ranks - 1, 0.01):
            return ("it counts the messages of one phase of the ring only; the all-reduce has two, "
                    "and each step of either waits for the one before")
        if any(_close(count, x, 0.01) for x in logs):
            return ("it grows like log p, as a tree's does; in a ring every step waits for the one before it, "
                    "so its latency grows with p")
    if term == "bandwidth term":
        if _close(ratio, 8, 0.01):
            return "it is 8 times too large: bandwidth is in bytes/s and grad_bytes in bytes; do not convert to bits"
        if _close(ratio, 1 / 8, 0.01):
            return "it is 8 times too small: bandwidth is already in bytes/s"
        if _close(ratio, 0.5, 0.01):
            return "it carries half the bytes: one of the ring's two phases is missing"
        if _close(ratio, ranks / (ranks - 1), 0.01) or _close(ratio, ranks / (ranks - 1) / 2, 0.01):
            return ("it sends whole gradients; in a ring each message carries one chunk of it")
    if _close(ratio, 2, 0.01):
        return "it is counted twice"
    if _close(ratio, 0.5, 0.01):
        return "it is half of what it should be"
    return f"it is {ratio:.3g} times what it should be"


def diagnose(fn, case, args) -> str | None:
    """Which term of fn's step is wrong on `case` (its args), found by calling fn with the others set to zero."""
    compute_s, grad_bytes, ranks, bandwidth, latency = args
    where = (f"on {ranks} rank{'s' if ranks > 1 else ''} at {case[1]}, {case[2]} ({grad_bytes:,} B of gradient, "
             f"{_us(compute_s)} of compute)")
    if ranks == 1:
        got, problem = call_student(fn, *args)
        if problem is None:
            return (f"{where}: with one node there is nothing to sum and nothing to send: the step is the compute "
                    f"alone ({compute_s:.6g} s); you predicted {float(got):.6g} s")
    want_c, want_lat, want_bw = terms(compute_s, grad_bytes, ranks, bandwidth, latency=latency)
    probes = [("compute", "no gradient and no latency", (compute_s, 0, ranks, bandwidth, 0.0), want_c),
              ("latency term", "no compute and no gradient", (0.0, 0, ranks, bandwidth, latency), want_lat),
              ("bandwidth term", "no compute and no latency", (0.0, grad_bytes, ranks, bandwidth, 0.0), want_bw)]
    for term, alone, probe, want in probes:
        got, problem = call_student(fn, *probe)
        if problem is not None:
            return None
        try:
            got = float(got)
        except (TypeError, ValueError):
            return None
        if not _close(got, want):
            what = {"compute": "the step is the compute alone,", "latency term": "the ring's messages wait in all",
                    "bandwidth term": "the ring's bytes take in all"}[term]
            shape = _shape(term, got, want=want, ranks=ranks, latency=latency)
            head = shape if shape.endswith("missing") else f"the {term} is off ({shape})"
            return f"{where}: {head}. With {alone}, your model gives {_us(got)}; {what} {_us(want)}"
    got, problem = call_student(fn, *args)
    if problem is None:
        return (f"{where}: each term alone is right, but together they give {_us(float(got))} where the step takes "
                f"{_us(want_c + want_lat + want_bw)}: the ranks compute first, then all-reduce")
    return None


def step_time(fn=None, tolerance: float = 0.01, cases=CASES) -> CheckResult:
    """Compare fn's predictions with steps measured on real ranks (within `tolerance`, relative)."""
    from ..units import parse_bandwidth, parse_time
    if fn is None:
        from ..exercises.ch1_step_time import predict_step_time as fn
    guarded = Guard(fn)
    name = "Exercise 1 (step time)"
    rows, wrong, passed = [], [], True
    for case in cases:
        ranks, bw, lat, width = case
        compute_s, grad_bytes, total_s = measure(ranks, bw, lat, width)
        args = (compute_s, grad_bytes, ranks, parse_bandwidth(bw), parse_time(lat))
        guess, problem = call_student(guarded, *args)
        if problem:
            return CheckResult(name, False, problem, rows)
        try:
            guess = float(guess)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"expected a number of seconds, got {guess!r}", rows)
        error = abs(guess - total_s) / total_s
        ok = error <= tolerance
        passed &= ok
        if not ok:
            wrong.append((case, args))
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "grad_bytes": grad_bytes,
                     "measured_s": f"{total_s:.6g}", "predicted_s": f"{guess:.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    if passed:
        return CheckResult(name, True, "your model predicts every measured step", rows)
    case, args = max(wrong, key=lambda w: (w[1][2] if w[1][2] > 1 else 0, -wrong.index(w)))
    message = diagnose(guarded, case, args) or (
        f"on {case[0]} ranks at {case[1]}, {case[2]} your step is off by more than {tolerance:.0%} (see the table); "
        "try it with the gradient, the latency or the compute set to zero and compare each part")
    return CheckResult(name, False, message, rows)
