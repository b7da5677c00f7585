"""Exercise 3: the SSP wait condition, checked on cases and then inside real parameter servers.

First a table of cases against the definition (Ho et al., NIPS 2013: a worker at clock c may
proceed when the slowest clock is at least c - s). The cases include workers ahead of the one
asking (three distinct clocks), which separate the rule from "fastest minus slowest <= s", and a
wrong answer that matches a typical mistake on every case is told which one. Then the student's function replaces the
package's in every server of a real SSP run with stragglers: it must give the same step time and
staleness histogram as the reference, and never let a worker run more than s steps ahead.
"""
from __future__ import annotations

import math

from . import CheckResult, call_student

# (step just pushed, clocks of live workers, bound s) -> may start step + 1?
CASES = [
    (0, [1, 1, 1], 0, True), (0, [1, 0, 1], 0, False), (3, [4, 4], 0, True), (3, [4, 3], 0, False),
    (3, [4, 2], 1, False), (3, [4, 3], 1, True), (5, [6, 4, 5], 2, True), (5, [6, 3, 5], 2, False),
    (5, [6, 3], 3, True), (9, [10, 0], math.inf, True), (2, [], 1, True), (0, [1, 0], 1, True),
    (3, [4, 6, 2], 2, True), (2, [3, 7, 1], 2, True), (1, [2, 5, 1], 1, True), (4, [5, 8, 2], 2, False),
    (5, [6, 1, 5], 2, False), (3, [4, 0], 1, False),
]

# typical wrong rules, and what to say when an answer matches one on every case
MISTAKES = [
    (lambda step, clocks, s: not clocks or max(clocks) - min(clocks) <= s,
     "you compared the fastest worker with the slowest; the rule is about this worker (its `step`): it may start "
     "step + 1 when the slowest has pushed at least step + 1 - s steps, however far ahead another worker is"),
    (lambda step, clocks, s: not clocks or min(clocks) >= step - s,
     "off by one: the worker is about to start step + 1, so the slowest must have pushed step + 1 - s steps"),
    (lambda step, clocks, s: not clocks or min(clocks) > step + 1 - s,
     "off by one at the boundary: a gap of exactly s steps is allowed (use >=)"),
    (lambda step, clocks, s: True, "your condition never waits: that is asynchronous training, not SSP"),
    (lambda step, clocks, s: not clocks or min(clocks) >= step + 1,
     "your condition ignores s: it waits like BSP"),
]


def diagnose(answers) -> str | None:
    """The typical mistake whose answers equal `answers` on every case, if any."""
    for rule, why in MISTAKES:
        if all(bool(rule(step, list(clocks), s)) == bool(got) for (step, clocks, s, _), got in zip(CASES, answers)):
            return why
    return None
RUN = dict(workers=4, servers=2, sharding="hash", mode="ssp", steps=12, width=64, stragglers=1, slowdown=4.0,
           eval_every=0, partition_bytes=4096)


def ssp_wait(fn=None, staleness_bounds=(1, 3)) -> CheckResult:
    """Compare fn with the definition on cases, then run it inside real servers (SSP, stragglers)."""
    from ..ps import consistency, run_ps
    from ..cluster import RankError
    if fn is None:
        from ..exercises.ch3_ssp_wait import ssp_ready as fn
    name = "Exercise 3 (SSP wait condition)"
    rows, answers, passed = [], [], True
    for step, clocks, s, want in CASES:
        got, problem = call_student(fn, step, list(clocks), s)
        if problem:
            return CheckResult(name, False, problem)
        ok = isinstance(got, (bool, int)) and bool(got) == want
        answers.append(got)
        passed &= ok
        rows.append({"step": step, "clocks": clocks, "s": s, "expected": want, "yours": got, "ok": "yes" if ok else "no"})
    if not passed:
        why = diagnose(answers) or "some cases disagree with the definition (look at s = 0 and at the boundary)"
        return CheckResult(name, False, why, rows)
    for s in staleness_bounds:
        try:
            mine = run_ps(staleness=s, ready=fn, **RUN)
        except RankError as exc:
            return CheckResult(name, False, f"inside the servers your function failed: {exc.remote_message}", rows)
        ref = run_ps(staleness=s, ready=consistency.ssp_ready, **RUN)
        same = mine.step_s == ref.step_s and mine.staleness == ref.staleness
        ok = same and mine.max_gap <= s
        passed &= ok
        rows.append({"step": "run", "clocks": f"s={s}", "s": s, "expected": f"step {ref.step_s * 1e6:.1f} us",
                     "yours": f"step {mine.step_s * 1e6:.1f} us, ahead <= {mine.max_gap}", "ok": "yes" if ok else "no"})
    message = ("your condition runs the servers exactly like the reference" if passed else
               "the servers behave differently with your condition")
    return CheckResult(name, passed, message, rows)
