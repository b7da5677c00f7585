"""Exercise 1: predict a data-parallel step's time before the ranks measure it.

The student writes ``predict_step_time(compute_s, grad_bytes, ranks, bandwidth, latency)``
(bandwidth in bytes/s, latency in s) for a step that computes, then sums gradients with a ring
all-reduce. The check measures real steps on real ranks over several networks and compares.
"""
from __future__ import annotations

from . import CheckResult, call_student

CASES = [  # (ranks, bandwidth, latency, width)
    (2, "10Gbit/s", "5us", 256),
    (4, "1Gbit/s", "50us", 512),
    (5, "25Gbit/s", "10us", 128),
    (8, "100Gbit/s", "2us", 1024),
]


def step_time(fn=None, tolerance: float = 0.01, cases=CASES) -> CheckResult:
    """Compare fn's predictions with steps measured on real ranks (within `tolerance`, relative)."""
    from ..step import measure_step
    from ..units import parse_bandwidth, parse_time
    if fn is None:
        from ..exercises.ch1_step_time import predict_step_time as fn
    rows, passed = [], True
    for ranks, bw, lat, width in cases:
        r = measure_step(ranks=ranks, bandwidth=bw, latency=lat, width=width)
        guess, problem = call_student(fn, r.compute_s, r.grad_bytes, ranks, parse_bandwidth(bw), parse_time(lat))
        if problem:
            return CheckResult("Exercise 1 (step time)", False, problem)
        try:
            error = abs(float(guess) - r.total_s) / r.total_s
        except (TypeError, ValueError):
            return CheckResult("Exercise 1 (step time)", False, f"expected a number of seconds, got {guess!r}")
        ok = error <= tolerance
        passed &= ok
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "grad_bytes": r.grad_bytes,
                     "measured_s": f"{r.total_s:.6g}", "predicted_s": f"{float(guess):.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    message = ("your model predicts every measured step" if passed else
               "some predictions are off: which term is missing or counted twice?")
    return CheckResult("Exercise 1 (step time)", passed, message, rows)
