"""Exercise 6: the student's DCTCP window, held to Linux's order of events and to a real run of the fabric.

One window of data, as Linux's tcp_dctcp.c and RFC 8257 section 3.3 run it: the first ACK of the
window that echoes a mark puts the sender into CWR, and the cut (dctcp_ssthresh) uses the alpha the
sender has at that moment, the estimate from the windows before; alpha takes in this window's marked
fraction only when the window's last packet is acknowledged (dctcp_update_alpha, once snd_una passes
next_seq). So a window with marks is cut with the old alpha, then alpha moves.

Cases: the first marked window (alpha starts at 1, so the cut halves); no marks (alpha decays, the
window stays); every packet marked; one mark in a hundred; fewer packets acknowledged than the window
holds; the 2-packet floor; g = 1/4; then the per-window (acked, marked) counts of a DCTCP flow in the
packet fabric (2 flows, 10 Gbit/s, K = 65 packets), replayed through the student's function and
compared window by window with the alphas the fabric's sender computed.

A wrong answer gets one message that names the case, the term that is off (the marked fraction, the
moving average and its weight g, the order of cut and update, the size of the cut, the floor) and the
value expected of it, without the formula. An answer that calls netlab's own rule fails and is told so.
"""
from __future__ import annotations

import math
import os
import sys

from . import CheckResult, call_student

NAME = "Exercise 6 (DCTCP's alpha and window)"
_OWN = {os.path.abspath(__file__), os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                 "fabric", "tcp.py")}


def _rule(alpha, cwnd, acked, marked, g):
    if marked:                                              # the cut at the window's first mark
        cwnd = max(cwnd * (1 - alpha / 2), 2.0)
    return (1 - g) * alpha + g * marked / acked, cwnd       # then, at its end, the estimate


def _cases():
    g = 1 / 16
    yield "first marked window (alpha = 1)", (1.0, 40.0, 40, 10, g)
    yield "no marks: alpha decays", (0.5, 40.0, 40, 0, g)
    yield "every packet marked", (0.2, 80.0, 80, 80, g)
    yield "one mark in a hundred", (0.05, 100.0, 100, 1, g)
    yield "fewer acked than the window", (0.2, 30.0, 24, 12, g)
    yield "floor of 2 packets", (1.0, 3.0, 3, 3, g)
    yield "g = 1/4", (0.3, 20.0, 20, 5, 0.25)


def _fabric_windows():
    """One DCTCP flow of the packet fabric: its g, its per-window (acked, marked) and the alphas it computed."""
    from ..fabric import ECN, Congestion, long_flows
    run = long_flows(2, 10e9 / 8, switch=Congestion("dctcp", ecn=ECN.dctcp(65 * 1500)), duration=0.004)
    sender = run.flows[0].sender
    return sender.g, sender.windows, sender.alphas


class _Watch:
    """Calls fn and notes whether it ran netlab's own DCTCP rule (this module's, or the fabric's sender),
    by name or through any alias: a profile hook sees every Python function fn calls."""

    def __init__(self, fn):
        self.fn, self.used = fn, None

    def __call__(self, *args):
        previous = sys.getprofile()

        def hook(frame, event, _):
            if event == "call" and self.used is None and os.path.abspath(frame.f_code.co_filename) in _OWN:
                self.used = frame.f_code.co_name
        sys.setprofile(hook)
        try:
            return self.fn(*args)
        finally:
            sys.setprofile(previous)


def _close(a, b, tol):
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def _alpha_problem(args, got, want, tol):
    """What is wrong with the student's alpha for one window (want = the right alpha)."""
    alpha, cwnd, acked, marked, g = args
    frac = marked / acked
    if got > 1 + tol or got < -tol:
        return (f"alpha is {got:.4f}, outside 0..1 (expected {want:.4f}): the marked fraction F is a share of "
                f"this window's acknowledged packets, and alpha a running estimate of it")
    if _close(got, alpha, tol) and not _close(want, alpha, tol):
        if not marked:
            return (f"alpha stayed at {got:.4f} in a window without marks (expected {want:.4f}): the estimate is "
                    f"updated at the end of every window, marked or not")
        return f"alpha did not move (expected {want:.4f}): the estimate takes in every window's marked fraction"
    if _close(got, frac, tol):
        return (f"alpha is {got:.4f}, this window's marked fraction alone (expected {want:.4f}): the moving "
                f"average forgets the windows before; alpha should move only part of the way, by the weight g")
    if _close(got, g * alpha + (1 - g) * frac, tol):
        return (f"alpha is {got:.4f} (expected {want:.4f}): the moving average's two weights are swapped, so alpha "
                f"jumps most of the way to this window's fraction instead of a step of g")
    if not _close(acked, cwnd, tol) and _close(got, (1 - g) * alpha + g * marked / cwnd, tol):
        return (f"alpha is {got:.4f} (expected {want:.4f}): F counts the marked share of the {acked} packets "
                f"acknowledged in this window, not of the window cwnd = {cwnd:g}")
    if marked < acked and _close(got, (1 - g) * alpha + g * (acked - marked) / acked, tol):
        return (f"alpha is {got:.4f} (expected {want:.4f}): F is the fraction of packets that came back marked, "
                f"not of those that came back unmarked")
    if g != 1 / 16 and _close(got, (1 - 1 / 16) * alpha + frac / 16, tol):
        return (f"alpha is {got:.4f} (expected {want:.4f}): it moved as if g were 1/16; use the weight g this "
                f"window was given ({g:g})")
    return (f"alpha is {got:.4f} where DCTCP's is {want:.4f}: check the marked fraction F and the moving "
            f"average's weight g")


def _cwnd_problem(args, got, want, tol):
    """What is wrong with the student's window, given that the alpha is right."""
    alpha, cwnd, acked, marked, g = args
    new_alpha = (1 - g) * alpha + g * marked / acked
    if not marked:
        return (f"the window went from {cwnd:g} to {got:.2f} packets in a window without marks (expected "
                f"{want:.2f}): only a mark makes DCTCP cut")
    if _close(got, cwnd, tol):
        return f"the window stayed at {cwnd:g} packets although {marked} were marked (expected a cut to {want:.2f})"
    if _close(got, max(cwnd * (1 - new_alpha / 2), 2.0), tol) and not _close(new_alpha, alpha, tol):
        return (f"the window is {got:.2f} packets (expected {want:.2f}): your cut used the alpha already updated "
                f"with this window's marks, {new_alpha:.4f}. The sender cuts when the window's first mark comes "
                f"back, with the alpha it has then ({alpha:.4f}); alpha takes in this window only when it ends")
    if got < 2 - tol:
        return (f"the window fell to {got:.2f} packets (expected {want:.2f}): DCTCP never cuts below 2 packets")
    if _close(got, max(cwnd / 2, 2.0), tol) and not _close(alpha, 1.0, tol):
        return (f"the window was halved to {got:.2f} packets whatever alpha (expected {want:.2f}): that is Reno's "
                f"reaction; DCTCP's cut grows with alpha ({alpha:.4f} here)")
    if _close(got, max(cwnd * (1 - alpha), 2.0), tol):
        return (f"the window is {got:.2f} packets (expected {want:.2f}): your cut is twice as deep as DCTCP's "
                f"(before the floor); even at alpha = 1 DCTCP only halves the window")
    if float(got).is_integer() and abs(got - want) < 1:
        return (f"the window is {got:g} packets, rounded to whole packets (expected {want:.2f}): keep it as a "
                f"fraction here")
    return (f"the window is {got:.2f} packets where DCTCP's is {want:.2f}: check which alpha the cut uses and "
            f"how deep it is")


def _judge(args, got, tol):
    """(ok, problem or None) for one window's answer."""
    want = _rule(*args)
    alpha, cwnd = got
    if not (_close(alpha, want[0], tol) and _close(cwnd, want[1], tol)) and \
            _close(alpha, want[1], tol) and _close(cwnd, want[0], tol):
        return False, f"you returned (cwnd, alpha) = ({alpha:g}, {cwnd:g}); return (alpha, cwnd)"
    if not _close(alpha, want[0], tol):
        return False, _alpha_problem(args, alpha, want[0], tol)
    if not _close(cwnd, want[1], tol):
        return False, _cwnd_problem(args, cwnd, want[1], tol)
    return True, None


def _pair(got):
    try:
        alpha, cwnd = (float(x) for x in got)
        return alpha, cwnd
    except (TypeError, ValueError):
        return None


def dctcp_update(fn=None, tolerance: float = 1e-9) -> CheckResult:
    """Compare fn(alpha, cwnd, acked, marked, g) with DCTCP's window, case by case and along a real run."""
    if fn is None:
        from ..exercises.ch6_dctcp import dctcp_update as fn
    watched = _Watch(fn)
    rows, first = [], None
    for case, args in _cases():
        got, problem = call_student(watched, *args)
        if watched.used:
            return CheckResult(NAME, False, f"{case}: your function calls netlab's own DCTCP code "
                               f"({watched.used}); write the window's update yourself", rows)
        if problem:
            return CheckResult(NAME, False, f"{case}: {problem}", rows)
        pair = _pair(got)
        if pair is None:
            return CheckResult(NAME, False, f"{case}: expected (alpha, cwnd), got {got!r}", rows)
        want = _rule(*args)
        ok, why = _judge(args, pair, tolerance)
        if not ok and first is None:
            first = f"{case}: {why}"
        rows.append({"case": case, "your alpha": f"{pair[0]:.4f}", "alpha": f"{want[0]:.4f}",
                     "your cwnd": f"{pair[1]:.2f}", "cwnd": f"{want[1]:.2f}", "ok": "yes" if ok else "no"})
    failed = sum(row["ok"] == "no" for row in rows)
    if first is not None:
        more = f" ({failed} of {len(rows)} cases differ)" if failed > 1 else ""
        return CheckResult(NAME, False, first + more, rows)
    g, windows, alphas = _fabric_windows()
    alpha, bad = 1.0, None                               # Linux's alpha on init (dctcp_alpha_on_init)
    for i, (acked, marked) in enumerate(windows):
        got, problem = call_student(watched, alpha, 50.0, acked, marked, g)
        if watched.used:
            return CheckResult(NAME, False, f"fabric run: your function calls netlab's own DCTCP code "
                               f"({watched.used}); write the window's update yourself", rows)
        pair = _pair(got) if not problem else None
        if pair is None:
            return CheckResult(NAME, False, f"fabric run, window {i + 1}: {problem or f'expected (alpha, cwnd), got {got!r}'}",
                               rows)
        alpha = pair[0]
        if bad is None and not math.isclose(alpha, alphas[i], rel_tol=1e-6, abs_tol=1e-9):
            bad = (i, acked, marked, alpha, alphas[i])
    ok = bool(windows) and bad is None
    rows.append({"case": f"{len(windows)} windows of a fabric run", "your alpha": f"{alpha:.4f}",
                 "alpha": f"{alphas[-1]:.4f}" if alphas else "", "your cwnd": "", "cwnd": "",
                 "ok": "yes" if ok else "no"})
    if not ok:
        if bad is None:
            return CheckResult(NAME, False, "fabric run: the run had no window to replay", rows)
        i, acked, marked, got, want = bad
        return CheckResult(NAME, False, f"fabric run: your alpha first leaves the fabric's sender at window {i + 1} "
                           f"of {len(windows)} ({acked} acknowledged, {marked} marked): {got:.6f} where the sender "
                           f"had {want:.6f}. Every single case passed, so look for state your function keeps "
                           f"between calls", rows)
    return CheckResult(NAME, True, "your update is DCTCP's in every case", rows)
