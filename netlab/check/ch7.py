"""Exercise 7: predict the time of a step whose gradient buckets overlap the backward pass.

The student writes ``predict_overlapped_step(bucket_bytes, ready_s, compute_s, optimizer_s, ranks,
bandwidth, latency)``. The check runs DDP-style bucketed steps on real ranks (``netlab.overlap``)
for several networks and bucket sizes, hands the student each bucket's size and ready time, and
compares the prediction with the measured step.
"""
from __future__ import annotations

from . import CheckResult, call_student

CASES = [  # (ranks, bandwidth, latency, bucket bytes)
    (2, "10Gbit/s", "5us", 100_000),
    (4, "1Gbit/s", "50us", 300_000),
    (4, "10Gbit/s", "50us", 1),
    (3, "25Gbit/s", "10us", 20_000),
]
SHAPE = dict(width=256, layers=4, batch=64)


def overlapped_step_time(fn=None, tolerance: float = 0.01, cases=CASES) -> CheckResult:
    """Compare fn's predictions with bucketed, overlapped steps measured on real ranks (relative `tolerance`)."""
    from .. import buckets, cluster, overlap, train
    from ..net.network import network
    from ..net.presets import device
    if fn is None:
        from ..exercises.ch7_overlap import predict_overlapped_step as fn
    name = "Exercise 7 (overlapped step)"
    dev = device("cpu-core")
    prof = buckets.backward_profile(SHAPE["width"], SHAPE["layers"], SHAPE["batch"])
    size = dict(zip(prof.order, prof.nbytes))
    compute = dev.seconds(prof.total_flops)
    optimizer = dev.seconds(2 * train.parameter_count(SHAPE["width"], SHAPE["layers"]))
    rows, passed = [], True
    for ranks, bw, lat, cap in cases:
        net = network(bw, lat)
        res = cluster.run(overlap.overlapped_step, ranks=ranks, network=net, device=dev, bucket_bytes=cap, **SHAPE)
        log = res.values[0]["buckets"]
        nbytes = [b["bytes"] for b in log]
        ready = [b["ready_s"] for b in log]
        plan = buckets.plan(prof, cap)
        assert nbytes == [sum(size[i] for i in b) for b in plan]
        measured = res.trace.makespan
        guess, problem = call_student(fn, nbytes, ready, compute, optimizer, ranks, net.nic.bandwidth, net.nic.latency)
        if problem:
            return CheckResult(name, False, problem)
        try:
            error = abs(float(guess) - measured) / measured
        except (TypeError, ValueError):
            return CheckResult(name, False, f"expected a number of seconds, got {guess!r}")
        ok = error <= tolerance
        passed &= ok
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "buckets": len(nbytes),
                     "measured_s": f"{measured:.6g}", "predicted_s": f"{float(guess):.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    message = ("your pipeline predicts every measured step" if passed else
               "some predictions are off: does each bucket wait for the one before it?")
    return CheckResult(name, passed, message, rows)

from .ch7_capstone import capstone  # noqa: E402,F401 -- the capstone exercise (check/ch7_capstone.py)
