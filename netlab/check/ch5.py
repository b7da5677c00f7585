"""Exercise 5: the student's max-min fair sharing, held to the simulator's on textbook and real cases.

Cases: two flows on one link; a dumbbell whose flows have different access links; the parking
lot (a long flow crossing three links, each shared with a short flow); a chain whose fair rates
have three levels, and a staircase with four levels where two links fill at once in each of the
first two rounds (so an algorithm that stops after one or two rounds, or freezes one link per
round, fails); and the flows of one ring
step with shuffled ranks on a k=4 fat-tree and on a 4:1 spine-leaf, routed by ECMP exactly as
``netlab.sim`` routes them. The reference is ``netlab.sim.maxmin.max_min_rates`` (a different
algorithm: many bottlenecks per round), to a relative 1e-6. A wrong answer is told the first flow
whose rate differs, its fair rate, and the link that should have frozen it (its bottleneck: a full
link on its route where no flow gets more than it), and which level of the filling it belongs to.
An answer that calls the simulator's ``max_min_rates`` (however imported) fails saying so.
"""
from __future__ import annotations

import numpy as np

from . import CheckResult, Guard, call_student

GB = 1e9


def _textbook():
    yield "two flows, one link", [["a"], ["a"]], {"a": 10 * GB}
    yield ("dumbbell", [["x1", "mid"], ["x2", "mid"], ["x3", "mid"]],
           {"x1": 5 * GB, "x2": 25 * GB, "x3": 25 * GB, "mid": 30 * GB})
    yield ("parking lot", [["l1", "l2", "l3"], ["l1"], ["l2"], ["l3"]],
           {"l1": 10 * GB, "l2": 10 * GB, "l3": 4 * GB})
    # three levels: one round of filling and one share-out of what is left give flow 3 5 GB/s, not 6
    yield "chain", [["a"], ["a", "b"], ["b", "c"], ["c"]], {"a": 2 * GB, "b": 5 * GB, "c": 10 * GB}
    # four levels (1, 4, 6, 10 GB/s), two links filling at once in each of the first two rounds
    yield ("staircase with ties", [["a"], ["a", "b"], ["b", "c"], ["c", "d"], ["d"], ["e"], ["e"], ["g"], ["g"]],
           {"a": 2 * GB, "b": 5 * GB, "c": 10 * GB, "d": 16 * GB, "e": 2 * GB, "g": 8 * GB})


def _ring_step(topo, seed: int):
    """One ring step's flows with shuffled ranks, as link names along their ECMP routes."""
    from ..net.routing import route
    p = topo.size
    slots = topo.placement(p, "shuffled", seed)
    r = route(topo, topo.endpoints[slots], topo.endpoints[slots[(np.arange(p) + 1) % p]], "ecmp", seed=seed)
    flows = [[topo.link_label(l) for l in r.path(f)] for f in range(p)]
    capacity = {topo.link_label(l): float(topo.capacity[l]) for l in np.unique(r.link)}
    return flows, capacity


def bottleneck(flow: int, flows, capacity, rates) -> str:
    """The link on `flow`'s route that is full under `rates` and where no flow gets more than `flow`."""
    load = {}
    for f, rate in zip(flows, rates):
        for link in f:
            load[link] = load.get(link, 0.0) + rate
    full = [link for link in flows[flow] if load[link] >= capacity[link] * (1 - 1e-9)
            and all(rates[g] <= rates[flow] * (1 + 1e-9) for g, f in enumerate(flows) if link in f)]
    return full[0] if full else "?"


ORDINAL = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]


def levels(rates) -> list[float]:
    """The distinct fair rates, lowest first: the levels at which progressive filling freezes flows."""
    out = []
    for r in sorted(rates):
        if not out or r > out[-1] * (1 + 1e-9):
            out.append(r)
    return out


def explain(case, flows, capacity, got, *, want, tolerance) -> str:
    """Name the first flow whose rate differs, the filling level it belongs to, and the link that freezes it."""
    i = int(np.argmax(np.abs(got - want) / want > tolerance))
    link = bottleneck(i, flows, capacity, want)
    sharing = sum(link in f for f in flows)
    steps = levels(want)
    level = next(j for j, r in enumerate(steps) if want[i] <= r * (1 + 1e-9))
    where = (f"the {ORDINAL[level]} of the {len(steps)} levels at which this case's flows freeze"
             if len(steps) > 1 and level < len(ORDINAL) else "")
    head = (f"{case}: flow {i} (over {' -> '.join(flows[i])}) gets {got[i] / GB:.4g} GB/s; its max-min fair rate "
            f"is {want[i] / GB:.4g} GB/s{f' ({where})' if where else ''}. Its bottleneck is link {link} "
            f"({capacity[link] / GB:.4g} GB/s, {sharing} flows)")
    if got[i] > want[i]:
        return head + ": that link is full at the fair rate and should have frozen it there"
    return head + (": it was frozen too early; only that link fills at the fair rate, so only it "
                   "should have frozen it")


def _cases():
    from ..net import fabrics
    yield from _textbook()
    yield ("ring step, shuffled, k=4 fat-tree", *_ring_step(fabrics.fat_tree(4), seed=5))
    yield ("ring step, shuffled, 4:1 spine-leaf", *_ring_step(fabrics.spine_leaf(4, 2, 4, 4), seed=2))


def max_min_rates(fn=None, tolerance: float = 1e-6) -> CheckResult:
    """Compare fn(flows, capacity) with the simulator's max-min rates on every case."""
    from ..sim.maxmin import max_min_rates as reference
    if fn is None:
        from ..exercises.ch5_max_min import max_min_rates as fn
    guarded = Guard(fn)
    name = "Exercise 5 (max-min fair sharing)"
    rows, passed, first = [], True, None
    for case, flows, capacity in _cases():
        got, problem = call_student(guarded, [list(f) for f in flows], dict(capacity))
        if problem:
            return CheckResult(name, False, f"{case}: {problem}", rows)
        want = np.array(reference(flows, capacity))
        try:
            got = np.asarray(got, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"{case}: expected a list of numbers, got {got!r}", rows)
        if got.size != want.size:
            return CheckResult(name, False, f"{case}: expected {want.size} rates (one per flow), got {got.size}", rows)
        error = float(np.max(np.abs(got - want) / want))
        ok = error <= tolerance
        if not ok and first is None:
            ratio = got / want
            if np.allclose(ratio, ratio[0], rtol=1e-6) and ratio[0] > 0:
                first = (f"{case}: every rate is {ratio[0]:.3g} times its max-min fair rate (flow 0 gets "
                         f"{got[0]:.4g}, fair is {want[0] / GB:.4g} GB/s): return bytes per second, as capacity is")
            elif np.allclose(np.sort(got), np.sort(want), rtol=tolerance):
                first = (f"{case}: the right rates, but not in the order of `flows`: the i-th rate must be the "
                         "i-th flow's")
            else:
                first = explain(case, flows, capacity, got, want=want, tolerance=tolerance)
        passed &= ok
        rows.append({"case": case, "flows": len(flows), "links": len(capacity),
                     "your slowest (GB/s)": f"{got.min() / GB:.4g}", "fair slowest (GB/s)": f"{want.min() / GB:.4g}",
                     "max error": f"{error:.2g}", "ok": "yes" if ok else "no"})
    message = "your rates are max-min fair in every case" if passed else first
    return CheckResult(name, passed, message, rows)
