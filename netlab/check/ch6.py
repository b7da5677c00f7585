"""Exercise 6: the student's DCTCP update, held to Linux's rules and to a real run of the fabric.

Cases: the first marked window (alpha starts at 1, so the window halves); no marks (alpha decays by
1 - g, the window stays); every packet marked; the 2-packet floor; and the per-window (acked, marked)
counts of a DCTCP flow in the packet fabric (2 flows, 10 Gbit/s, K = 65 packets), replayed through
the student's function and compared with the alpha the fabric's sender computed. The reference
for the single cases is the rule in Alizadeh et al. SIGCOMM'10 (section 3.1) and tcp_dctcp.c.
"""
from __future__ import annotations

import math

from . import CheckResult, call_student


def _rule(alpha, cwnd, acked, marked, g):
    alpha = (1 - g) * alpha + g * marked / acked
    return alpha, (max(cwnd * (1 - alpha / 2), 2.0) if marked else cwnd)


def _cases():
    g = 1 / 16
    yield "first marked window (alpha = 1)", (1.0, 40.0, 40, 10, g)
    yield "no marks: alpha decays", (0.5, 40.0, 40, 0, g)
    yield "every packet marked", (0.2, 80.0, 80, 80, g)
    yield "floor of 2 packets", (1.0, 3.0, 3, 3, g)
    yield "g = 1/4", (0.3, 20.0, 20, 5, 0.25)


def _fabric_windows():
    """One DCTCP flow of the packet fabric: its g, its per-window (acked, marked) and the alphas it computed."""
    from ..fabric import ECN, long_flows
    run = long_flows(2, 10e9 / 8, transport="dctcp", ecn=ECN.dctcp(65 * 1500), duration=0.004)
    sender = run.flows[0].sender
    return sender.g, sender.windows, sender.alphas


def dctcp_update(fn=None, tolerance: float = 1e-9) -> CheckResult:
    """Compare fn(alpha, cwnd, acked, marked, g) with DCTCP's rule, case by case and along a real run."""
    if fn is None:
        from ..exercises.ch6_dctcp import dctcp_update as fn
    name = "Exercise 6 (DCTCP's alpha and window)"
    rows, passed = [], True
    for case, args in _cases():
        got, problem = call_student(fn, *args)
        if problem:
            return CheckResult(name, False, f"{case}: {problem}", rows)
        try:
            alpha, cwnd = (float(x) for x in got)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"{case}: expected (alpha, cwnd), got {got!r}", rows)
        want = _rule(*args)
        ok = math.isclose(alpha, want[0], rel_tol=tolerance, abs_tol=tolerance) and \
            math.isclose(cwnd, want[1], rel_tol=tolerance, abs_tol=tolerance)
        passed &= ok
        rows.append({"case": case, "your alpha": f"{alpha:.4f}", "alpha": f"{want[0]:.4f}",
                     "your cwnd": f"{cwnd:.2f}", "cwnd": f"{want[1]:.2f}", "ok": "yes" if ok else "no"})
    g, windows, alphas = _fabric_windows()
    alpha = 1.0                                          # Linux's alpha on init
    for acked, marked in windows:
        got, problem = call_student(fn, alpha, 50.0, acked, marked, g)
        if problem:
            return CheckResult(name, False, f"fabric run: {problem}", rows)
        alpha = float(got[0])
    ok = bool(windows) and math.isclose(alpha, alphas[-1], rel_tol=1e-6, abs_tol=1e-9)
    passed &= ok
    rows.append({"case": f"{len(windows)} windows of a fabric run", "your alpha": f"{alpha:.4f}",
                 "alpha": f"{alphas[-1]:.4f}", "your cwnd": "", "cwnd": "", "ok": "yes" if ok else "no"})
    message = ("your update is DCTCP's in every case" if passed else
               "some results differ: is F the marked fraction of this window, is alpha a moving average "
               "with weight g, and is the window cut only when something was marked?")
    return CheckResult(name, passed, message, rows)
