"""Exercise 1: predict a data-parallel step's time before the ranks measure it.

The student writes ``predict_step_time(compute_s, grad_bytes, ranks, bandwidth, latency)``
(bandwidth in bytes/s, latency in s) for a step that computes, then sums gradients with a ring
all-reduce. The check measures real steps on real ranks over several networks (one node among
them: it does not communicate) and compares. A wrong answer is held against the typical mistakes
(milliseconds for seconds, bits for bytes, half the ring, no latency, no compute), each computed
from the ring's formula 2(p-1) alpha + 2(p-1)/p n/B, and the one it matches on every case it gets wrong
is named; an answer wrong only on the one-node case is told so.
"""
from __future__ import annotations

from . import CheckResult, call_student

CASES = [  # (ranks, bandwidth, latency, width)
    (1, "10Gbit/s", "5us", 256),
    (2, "10Gbit/s", "5us", 256),
    (4, "1Gbit/s", "50us", 512),
    (5, "25Gbit/s", "10us", 128),
    (8, "100Gbit/s", "2us", 1024),
]


def mistakes(compute_s, grad_bytes, ranks, bandwidth, latency):
    """(what a typical wrong model predicts, what is wrong with it) for one case."""
    lat = 2 * (ranks - 1) * latency                          # 2(p-1) messages in sequence, s
    bw = 2 * (ranks - 1) / ranks * grad_bytes / bandwidth    # 2(p-1)/p n bytes per rank, s
    right = compute_s + lat + bw
    return [
        (1e3 * right, "your answers are 1000x the measured times: return seconds, not milliseconds"),
        (compute_s + lat + 8 * bw, "your bandwidth term is 8x too large: bandwidth is in bytes/s and "
                                   "grad_bytes in bytes; do not convert to bits"),
        (compute_s + lat + bw / 8, "your bandwidth term is 8x too small: bandwidth is already in bytes/s"),
        (compute_s + lat / 2 + bw / 2, "half the bytes and half the messages: the all-gather phase is missing "
                                       "(a ring all-reduce is a reduce-scatter then an all-gather, p-1 steps each)"),
        (compute_s + lat + bw / 2, "half the bytes: the all-gather phase is missing (each rank sends "
                                   "2(p-1)/p of the gradient, not (p-1)/p)"),
        (compute_s + bw, "the latency term is missing: 2(p-1) messages in sequence, each pays the latency once"),
        (compute_s + lat / 2 + bw, "half the latency: the ring has 2(p-1) sequential messages, not p-1"),
        (compute_s + lat + 2 * grad_bytes / bandwidth, "each rank sends 2(p-1)/p of the gradient, "
                                                       "not twice the whole gradient"),
        (lat + bw, "the compute time is missing: a step computes, then communicates"),
    ]


def diagnose(fn, case_values) -> str | None:
    """The first typical mistake that fn's answers match on every case it gets wrong (0.5 %)."""
    wrong = [(args, guess) for args, guess, ok in case_values if not ok]
    for i, (_, why) in enumerate(mistakes(*wrong[0][0])):
        if all(abs(guess - mistakes(*args)[i][0]) <= 0.005 * abs(mistakes(*args)[i][0]) for args, guess in wrong):
            return why
    if any(args[2] == 1 for args, _ in wrong):
        args, guess = next((a, g) for a, g in wrong if a[2] == 1)
        return (f"with one node there is nothing to sum and nothing to send: the step is the compute alone "
                f"({args[0]:.6g} s), you predicted {guess:.6g} s")
    return None


def step_time(fn=None, tolerance: float = 0.01, cases=CASES) -> CheckResult:
    """Compare fn's predictions with steps measured on real ranks (within `tolerance`, relative)."""
    from ..step import measure_step
    from ..units import parse_bandwidth, parse_time
    if fn is None:
        from ..exercises.ch1_step_time import predict_step_time as fn
    name = "Exercise 1 (step time)"
    rows, seen, passed = [], [], True
    for ranks, bw, lat, width in cases:
        r = measure_step(ranks=ranks, bandwidth=bw, latency=lat, width=width)
        args = (r.compute_s, r.grad_bytes, ranks, parse_bandwidth(bw), parse_time(lat))
        guess, problem = call_student(fn, *args)
        if problem:
            return CheckResult(name, False, problem)
        try:
            guess = float(guess)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"expected a number of seconds, got {guess!r}")
        error = abs(guess - r.total_s) / r.total_s
        ok = error <= tolerance
        passed &= ok
        seen.append((args, guess, ok))
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "grad_bytes": r.grad_bytes,
                     "measured_s": f"{r.total_s:.6g}", "predicted_s": f"{guess:.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    if passed:
        return CheckResult(name, True, "your model predicts every measured step", rows)
    message = diagnose(fn, seen) or "some predictions are off: which term is missing or counted twice?"
    return CheckResult(name, False, message, rows)
