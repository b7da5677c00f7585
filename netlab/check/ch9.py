"""Exercise 9: the student's REPS entropy recycling, held to REPS's rules and to a failing fabric.

Cases: a send with nothing to recycle (explore), a send with recycled entropies (the oldest, used once),
a clean ACK (recycled, newest last), a clean ACK into a full buffer (the oldest goes), a marked, a
trimmed and a lost packet (not recycled), a smaller buffer, and the caller's list left alone. Then the
student's function decides every packet's path in the packet fabric (``fabric.ethernet``: four hosts
spraying 1 MB each across a four-spine spine-leaf whose spine link leaf0->spine0 fails 1 ms in, never
rerouted, NSCC with trimming), against the same run decided by the rule: the completion time, the
packets lost on the dead link and the time of the last one sent onto it must be the rule's. The rule is
that of Bonato et al. (arXiv 2407.21625) and UEC htsim's ``UecMpReps`` without its freezing mode.
A wrong answer is told the case, what came back and what was expected there, not the code.
"""
from __future__ import annotations

import copy
import time

from . import CheckResult, call_student

EVENTS = ("send", "clean", "marked", "trimmed", "lost")


def _rule(buffer, event, entropy, size=8):
    """REPS's rule, written for the check."""
    kept = [e for e in buffer]
    if event == "send":
        return (kept.pop(0), kept) if kept else (entropy, kept)
    if event == "clean":
        kept.append(entropy)
        while len(kept) > size:
            del kept[0]
    return None, kept


CASES = [
    ("a send with nothing to recycle", ([], "send", 5, 8)),
    ("a send with recycled entropies", ([3, 1, 6], "send", 5, 8)),
    ("a clean ACK", ([3, 1], "clean", 6, 8)),
    ("a clean ACK into a full buffer", ([0, 1, 2, 3, 4, 5, 6, 7], "clean", 9, 8)),
    ("a marked ACK (ECN)", ([3, 1], "marked", 6, 8)),
    ("a trimmed packet (NACK)", ([3, 1], "trimmed", 6, 8)),
    ("a lost packet", ([3, 1], "lost", 6, 8)),
    ("a clean ACK into a full buffer of 4", ([2, 4, 6, 8], "clean", 1, 4)),
    ("a send after recycling the same entropy twice", ([4, 4], "send", 0, 8)),
]

FABRIC = dict(hosts=8, block=1024 * 1024, link="leaf0->spine0", at=1e-3, seed=3)


def _fabric(fn) -> dict:
    """The failover of ``FABRIC`` with `fn` choosing every packet's path; what it observed."""
    from ..fabric import ethernet
    from ..fabric.congestion import Congestion
    from ..fabric.failure import Failure
    from ..fabric.experiments import PacketDetail
    from ..fabric.multipath import Chooser
    f = FABRIC

    class Recycling(Chooser):
        listens = True

        def __init__(self, paths, fabric, seed=0):
            super().__init__(paths, fabric, seed)
            self.buffer = []

        def choose(self):
            fresh = self.rng.randrange(self.k)
            ev, self.buffer = fn(list(self.buffer), "send", fresh, 8)
            if not (isinstance(ev, int) and 0 <= ev < self.k):
                raise ValueError(f"a send returned entropy {ev!r}; expected one of 0..{self.k - 1}")
            return ev

        def acked(self, seq, ce):
            ev = self.ev_of.pop(seq, None)
            if ev is not None:
                _, self.buffer = fn(list(self.buffer), "marked" if ce else "clean", ev, 8)

        def nacked(self, seq):
            ev = self.ev_of.pop(seq, None)
            if ev is not None:
                _, self.buffer = fn(list(self.buffer), "trimmed", ev, 8)

    switch = Congestion("nscc", buffer=64 * 1024, trim=True, ecn=ethernet.DEFAULT, seed=f["seed"])
    fab, net = ethernet.build("spineleaf:2:4:1", f["hosts"], switch=switch)
    failure = Failure(f["link"], f["at"], None)
    net.fail(failure)
    detail, wall = PacketDetail(fab, [], net, ""), time.perf_counter()
    left, times = [f["hosts"] // 2], []

    def done(_):
        left[0] -= 1
        if not left[0]:
            times.append(fab.now)
    for i in range(f["hosts"] // 2):
        a, b = i, f["hosts"] // 2 + i
        paths = net.paths(net.node(a), net.node(b))
        chooser = Recycling(paths, fab, seed=f["seed"] * 100 + i)
        flow = net.flow(f"{a}->{b}", a, b, f["block"], transport="nscc", chooser=chooser, on_done=done)
        sender = net.sender("nscc", flow, 1e-3, {"trimming": True})
        fab.add_flow(flow, sender)
        detail.flows.append(flow)
    fab.run(2.0, stop=lambda: left[0] == 0, max_events=2_000_000)
    run = detail.finish(times, wall_s=time.perf_counter() - wall, complete=not left[0])
    info = ethernet.recovery(run)
    return {"completion_s": run.time_s,
            "lost": info.get("lost_on_failed_link", 0), "last_s": info.get("last_sent_onto_it_s", 0.0)}


def _explain(case, args, got, want) -> str:
    buffer, event, entropy, size = args
    if event == "send":
        if got[0] != want[0]:
            what = ("the entropy the caller drew (nothing was there to recycle)" if not buffer else
                    "an entropy from the buffer: the one that has waited longest")
            return f"{case}: you returned entropy {got[0]!r}; expected {what}"
        return (f"{case}: the buffer you returned has {len(got[1])} entries; expected {len(want[1])}: the entropy "
                f"used is taken out, the others stay in their order")
    if event == "clean":
        if len(got[1]) != len(want[1]):
            return (f"{case}: the buffer you returned has {len(got[1])} entries; it holds at most {size}, and a "
                    f"recycled entropy joins it")
        return (f"{case}: the buffer you returned is {got[1]!r}; expected the acknowledged entropy last (newest) "
                f"and, when full, the one that waited longest gone")
    return (f"{case}: the buffer you returned is {got[1]!r}; a packet that was {event} must not make its entropy "
            f"reusable, and nothing else changes")


def reps_recycling(fn=None) -> CheckResult:
    """Compare fn(buffer, event, entropy, size) with REPS's rule, case by case, then in a failing fabric."""
    if fn is None:
        from ..exercises.ch9_reps import reps as fn
    name = "Exercise 9 (REPS's entropy recycling)"
    rows, passed, first = [], True, None
    for case, args in CASES:
        given = copy.deepcopy(args)
        got, problem = call_student(fn, *given)
        if problem:
            return CheckResult(name, False, f"{case}: {problem}", rows)
        if given[0] != args[0]:
            return CheckResult(name, False, f"{case}: your function changed the list it was given "
                                            f"({args[0]!r} became {given[0]!r}); return a new one", rows)
        try:
            ev, buf = got
            buf = list(buf)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"{case}: expected (entropy or None, buffer), got {got!r}", rows)
        want = _rule(*args)
        ok = ev == want[0] and buf == want[1]
        if not ok and first is None:
            first = _explain(case, args, (ev, buf), want)
        passed &= ok
        rows.append({"case": case, "you returned": f"{ev!r}, {buf!r}", "ok": "yes" if ok else "no"})
    if not passed:
        return CheckResult(name, False, first, rows)
    try:
        got = _fabric(fn)
    except Exception as exc:  # noqa: BLE001 -- a bug in the answer is reported, not raised
        return CheckResult(name, False, f"the failing fabric: your function raised {type(exc).__name__}: {exc}", rows)
    want = _fabric(_rule)
    ok = got == want
    rows.append({"case": f"4 flows over 4 spines, {FABRIC['link']} fails at {FABRIC['at'] * 1e3:g} ms",
                 "you returned": f"done {got['completion_s'] * 1e3:.3f} ms, {got['lost']} packets lost on the dead "
                                 f"link, the last sent {got['last_s'] * 1e6:.0f} us after it failed",
                 "ok": "yes" if ok else "no"})
    if not ok:
        return CheckResult(name, False, (
            f"the failing fabric: with your recycling the flows finished at {got['completion_s'] * 1e3:.3f} ms and "
            f"lost {got['lost']} packets on the dead link; the rule's finished at {want['completion_s'] * 1e3:.3f} ms "
            f"losing {want['lost']}: some decision differs on a case the single cases did not try"), rows)
    return CheckResult(name, True, "your recycling is REPS's in every case, and steers the fabric around the "
                                   "failed link exactly as REPS does", rows)
