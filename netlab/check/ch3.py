"""Exercise 3: the SSP wait condition, checked on every state SSP can reach, then inside real parameter servers.

What a server asks. A worker has just pushed step `step`, so its clock (steps pushed) is step + 1, and
asks whether it may start step + 1; `clocks` are the clocks of every worker still training, its own
included. Under SSP with bound s a worker that finished step t starts step t + 1 only when the slowest
has finished step t - s (Ho et al., NIPS 2013; ``netlab.ps.consistency.ssp_ready``).

Which states are reachable. A server asks when a worker pushes (about it) and asks again about every
held worker after every push. Whatever the workers' speeds, in every state it asks about (i) the
asker's clock is step + 1; (ii) no clock is more than s + 1 above the slowest m: a worker got clock c by
being let go at clock c - 1, when the slowest had pushed at least c - 1 - s, and the slowest only moves
forward; and (iii) if the asker is among the slowest (step + 1 = m), no clock is above m + s: it was at
m - 1 before its push, so nobody could be let go beyond m + s meanwhile (a held worker asked again
sits at m + s or m + s + 1, a state (i)-(iii) already has). For s = infinity, any clocks. Conversely
every such state is reached: let all workers run in step to clock m (m - 1 for the asker in case (iii)),
hold the slowest there, let each other worker run on to its clock, and let the asker push last.
``tests/test_wrong_answers_ch3.py`` confirms it by enumerating an SSP server's states over every order
of events for small worlds. So the cases are all states (i)-(iii) with 1 to 4 workers, s = 0 ... 3,
the slowest at clock 0 or 5, every order of the list and every asker, and some with s = infinity: a
rule passes exactly when it agrees with SSP on all of them, so a rule equivalent on reachable states
passes (however it treats states SSP never reaches) and one that differs on any of these fails. The
grader's hidden variant draws more reachable states (more workers, other clocks).

Then the student's function replaces the package's in every server of a real SSP run with stragglers:
it must give the same step time and staleness histogram as the reference, and never let a worker run
more than s steps ahead. An answer that calls the package's ``ssp_ready`` fails saying so.
"""
from __future__ import annotations

import functools
import itertools
import math

from . import CheckResult, Guard, call_student

WORKERS = 4                       # 1 .. WORKERS workers in the public cases
BOUNDS = (0, 1, 2, 3)             # finite staleness bounds
SLOWEST = (0, 5)                  # the slowest worker's clock
INFINITE = [(0, [1, 0]), (4, [5, 0, 2]), (9, [10, 0]), (2, [3, 9, 0]), (0, [1, 7, 3, 0])]   # s = inf: any clocks


def reference(step, clocks, s) -> bool:
    from ..ps.consistency import ssp_ready
    return bool(ssp_ready(step, list(clocks), s))


def reachable(step: int, clocks, s) -> bool:
    """May a server running SSP ask about this state? (see the module's text)"""
    if step < 0 or step + 1 not in clocks or min(clocks) < 0:
        return False
    if math.isinf(s):
        return True
    spread = max(clocks) - min(clocks)
    return spread <= s + 1 and (step + 1 > min(clocks) or spread <= s)


def states(workers: int = WORKERS, bounds=BOUNDS, slowest=SLOWEST) -> list[tuple]:
    """Every reachable (step, clocks, s) with 1..`workers` workers: the clocks in every order, every asker."""
    seen, out = set(), []
    for s in bounds:
        for n in range(1, workers + 1):
            for offsets in itertools.product(range(s + 2), repeat=n):
                if min(offsets):
                    continue
                for m in slowest:
                    clocks = tuple(m + o for o in offsets)
                    for c in sorted(set(clocks)):
                        key = (c - 1, clocks, s)
                        if c >= 1 and key not in seen and reachable(c - 1, clocks, s):
                            seen.add(key)
                            out.append(key)
    out += [(step, tuple(clocks), math.inf) for step, clocks in INFINITE]
    return out


@functools.lru_cache(maxsize=1)
def _public() -> list[tuple]:
    return [(step, clocks, s, reference(step, clocks, s)) for step, clocks, s in states()]


def _cases() -> list[tuple]:
    """(step, clocks, s, SSP's answer) for every case (the grader's variant replaces this function)."""
    return _public()


def _fmt(case) -> str:
    step, clocks, s = case[:3]
    return f"step {step}, clocks {list(clocks)}, s = {s:g}"


def _explain(case) -> str:
    """What the case means, in steps: the step this worker would start and where the slowest is."""
    step, clocks, s = case[:3]
    slowest = min(clocks)
    behind = step + 1 - slowest
    return (f"this worker would start step {step + 1} while the slowest has pushed {slowest} step"
            f"{'s' if slowest != 1 else ''} (it works on step {slowest}), {behind} step{'s' if behind != 1 else ''} "
            "behind")


def diagnose(wrong: list, cases: list) -> str:
    """One message from the states where the answer and SSP disagree, (step, clocks, s, SSP's, yours) each."""
    go = [w for w in wrong if w[3] and not w[4]]                     # SSP lets it start, the answer holds it
    hold = [w for w in wrong if not w[3] and w[4]]                   # SSP holds it, the answer lets it start
    gap = lambda w: w[0] + 1 - min(w[1])                             # noqa: E731 -- steps the slowest is behind
    pick = lambda ws: min(ws, key=lambda w: (len(w[1]) < 2, len(w[1]), math.isinf(w[2]),   # noqa: E731
                                             w[2], max(w[1]), w[0]))
    count = f"{len(wrong)} of the {len(cases)} states SSP can reach disagree"
    if all(math.isinf(w[2]) for w in wrong):
        return (f"{count}, all with s = inf. Then SSP is fully asynchronous and no worker ever waits; on "
                f"{_fmt(pick(wrong))} yours makes it wait")
    if hold and not go:
        w = pick(hold)
        if len(hold) == sum(not c[3] for c in cases):
            return (f"{count}: your condition never makes a worker wait. On {_fmt(w)}, {_explain(w)}: more than "
                    f"s = {w[2]:g} allows, so it must wait (with s = 0 that is BSP's wait)")
        return (f"{count}: yours sometimes lets a worker start when the slowest is more than s steps behind. On "
                f"{_fmt(w)}, {_explain(w)}: it must wait")
    if go and not hold:
        w = pick(go)
        if all(gap(x) == x[2] for x in go):
            return (f"{count}: yours makes a worker wait when the slowest is exactly as far behind as s allows. On "
                    f"{_fmt(w)}, {_explain(w)}: SSP lets it start")
        if len(go) == sum(c[3] and min(c[1]) < c[0] + 1 for c in cases):
            w = pick([x for x in go if x[2] > 0] or go)
            return (f"{count}: yours waits as BSP does, whatever s is. On {_fmt(w)}, {_explain(w)}: with "
                    f"s = {w[2]:g} it may start")
        if all(max(x[1]) > x[0] + 1 for x in go):
            return (f"{count}: yours makes a worker wait because another worker is far ahead of the slowest. On "
                    f"{_fmt(w)} (reachable: the worker at {max(w[1])} was let go when the slowest was where it is "
                    f"now, and waits), {_explain(w)}: SSP lets it start. The bound is between the worker that asks "
                    "and the slowest")
        return f"{count}: yours makes a worker wait where SSP lets it start, e.g. on {_fmt(w)}: {_explain(w)}"
    w = pick(wrong)
    return (f"{count}, some where yours waits and SSP does not, some the other way round. On {_fmt(w)}, "
            f"{_explain(w)}: SSP says {'start' if w[3] else 'wait'}, yours says {'start' if w[4] else 'wait'}")


def _order_problem(fn, cases) -> str | None:
    """A case whose answer changes when the same clocks are listed in another order (the asker anywhere)."""
    for case in cases:
        step, clocks, s, want = case
        if len(clocks) < 2 or len(set(clocks)) < 2:
            continue
        answers = set()
        for order in list(itertools.permutations(clocks))[:6]:
            got, problem = call_student(fn, step, list(order), s)
            if problem:
                return None
            answers.add(bool(got))
        if len(answers) > 1:
            return (f"your answer changes with the order of the clocks: on step {step}, clocks {sorted(clocks)} in "
                    f"some order, s = {s:g}, it says start in one order and wait in another. `clocks` lists the "
                    "workers in rank order; the worker that asks may be anywhere in it")
    return None


RUN = dict(workers=4, servers=2, sharding="hash", mode="ssp", steps=12, width=64, stragglers=1, slowdown=4.0,
           eval_every=0, partition_bytes=4096)


@functools.lru_cache(maxsize=8)
def _reference_run(s):
    from ..ps import consistency, run_ps
    ref = run_ps(staleness=s, ready=consistency.ssp_ready, **RUN)
    return ref.step_s, ref.staleness


def ssp_wait(fn=None, staleness_bounds=(1, 3)) -> CheckResult:
    """Compare fn with SSP on every reachable case, then run it inside real servers (SSP, stragglers)."""
    from ..ps import run_ps
    from ..runtime.errors import RankError
    if fn is None:
        from ..exercises.ch3_ssp_wait import ssp_ready as fn
    guarded = Guard(fn)
    name = "Exercise 3 (SSP wait condition)"
    cases = _cases()
    wrong, per_bound = [], {}
    for case in cases:
        step, clocks, s, want = case
        got, problem = call_student(guarded, step, list(clocks), s)
        if problem:
            return CheckResult(name, False, problem if problem.startswith("not implemented") else
                               f"on {_fmt(case)}: {problem}")
        if not isinstance(got, bool) and type(got).__name__ not in ("bool_", "bool") and got not in (0, 1):
            return CheckResult(name, False, f"on {_fmt(case)}: expected True or False, got {got!r}")
        key = "inf" if math.isinf(s) else s
        seen, bad = per_bound.get(key, (0, 0))
        per_bound[key] = (seen + 1, bad + (bool(got) != want))
        if bool(got) != want:
            wrong.append((step, tuple(clocks), s, want, bool(got)))
    rows = [{"step": "every reachable state", "clocks": f"{seen} states", "s": key, "expected": "SSP's answer",
             "yours": f"{bad} disagree" if bad else "all agree", "ok": "no" if bad else "yes"}
            for key, (seen, bad) in per_bound.items()]
    for step, clocks, s, want, got in sorted(wrong, key=lambda w: (len(w[1]), w[2], w[0]))[:3]:
        rows.append({"step": step, "clocks": list(clocks), "s": s, "expected": want, "yours": got, "ok": "no"})
    if wrong:
        order = _order_problem(guarded, cases)
        return CheckResult(name, False, order or diagnose(wrong, cases), rows)
    passed = True
    for s in staleness_bounds:
        try:
            mine = run_ps(staleness=s, ready=guarded, **RUN)
        except RankError as exc:
            if exc.exc_type == "OwnImplementation":
                from . import own_implementation
                return CheckResult(name, False, own_implementation(exc.remote_message), rows)
            return CheckResult(name, False, f"inside the servers your function failed: {exc.remote_message}", rows)
        ref_step, ref_staleness = _reference_run(s)
        same = mine.step_s == ref_step and mine.staleness == ref_staleness
        ok = same and mine.max_gap <= s
        passed &= ok
        rows.append({"step": "run", "clocks": f"s={s}", "s": s, "expected": f"step {ref_step * 1e6:.1f} us",
                     "yours": f"step {mine.step_s * 1e6:.1f} us, ahead <= {mine.max_gap}", "ok": "yes" if ok else "no"})
    message = ("your condition agrees with SSP on every reachable state and runs the servers exactly like the "
               "reference" if passed else
               "your condition agrees with SSP on every listed state, but inside real servers (4 workers, one "
               "straggler, 12 steps) the run differs from SSP's: does it depend on something other than the step, "
               "the clocks and s?")
    return CheckResult(name, passed, message, rows)
