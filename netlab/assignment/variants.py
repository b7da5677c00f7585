"""Hidden variants: each check's cases drawn from an instructor's seed.

Without a seed a check runs the cases the chapter shows (a student can see them, and print the
expected values). With ``seed=S`` the grader draws other cases of the same kinds -- ranks, sizes,
networks, clocks, gradients, fabrics -- so an answer that hard-codes what the notebook printed, or
copies a classmate's output, fails. The same seed gives the same cases (a re-grade is identical);
the expected answers still come from the package's references (torch's all-reduce, the measured
step, ``consistency.ssp_ready``, netlab's top-k, the simulator's max-min), never from the seed.

ch3, ch4, ch5 and ch6 keep their cases in module constants (or functions); the grader replaces them
in the grading subprocess only (``patch``), never in the instructor's own process. ch6's variant also
draws the fabric run whose windows the answer replays (flows, link speed, marking threshold, seed);
its expected alphas are the fabric's own DCTCP sender's. ch7 draws the networks and bucket sizes of
the steps measured on real ranks. ch8 (the capstone's design) has no variant: the design is judged on
the one cluster the chapter states, and the check prints the efficiency a design reaches, so a
copied design passes; grade the design's justification if that matters.
ch9 draws more recycling steps and the failing fabric (which link, when, the seed); the expected
runs are those the rule decides.
"""
from __future__ import annotations

import math
import random

from .. import seeds, validate
from . import BY_CHAPTER

NETWORKS = [("1Gbit/s", "50us"), ("10Gbit/s", "5us"), ("25Gbit/s", "10us"), ("100Gbit/s", "2us"),
            ("40Gbit/s", "20us"), ("200Gbit/s", "1us")]


def _ch1(rng):
    """One node, then four drawn cases in which compute, latency and bytes each make at least
    ``ch1.TERM_SHARE`` of the step (as in the public cases), so no term can be left out unseen."""
    from ..check import ch1
    cases = [(1, *rng.choice(NETWORKS), rng.choice([64, 128, 256]))]
    for ranks in rng.sample(range(3, 9), 4):
        while True:
            case = (ranks, *rng.choice(NETWORKS + LATENCY_HEAVY), rng.choice([64, 96, 128, 192, 256, 384]))
            if min(ch1.shares(case)) >= 2 * ch1.TERM_SHARE:      # estimated compute: a margin of 2x
                break
        cases.append(case)
    return {"cases": cases}


LATENCY_HEAVY = [("10Gbit/s", "20us"), ("25Gbit/s", "20us"), ("100Gbit/s", "10us"), ("2.5Gbit/s", "50us")]


def _ch2(rng):
    sizes = [rng.randint(1, 9), rng.randint(10, 999), rng.randint(1000, 9999), rng.randint(10_000, 70_000)]
    return {"cases": [(p, n) for p, n in zip(rng.sample(range(2, 7), 4), sizes)]}


def _ch3_cases(rng):
    """The public states (every reachable one with up to 4 workers) and 60 more drawn from the states SSP can
    reach (``ch3.reachable``) with 5 to 8 workers, other clocks and bounds up to 4 or infinity."""
    from ..check import ch3
    cases = list(ch3._public())
    while len(cases) < len(ch3._public()) + 60:
        s = rng.choice([0, 1, 2, 3, 4, math.inf])
        slowest, top = rng.randint(0, 20), (8 if math.isinf(s) else s + 1)
        clocks = [slowest] + [slowest + rng.randint(0, top) for _ in range(rng.randint(4, 7))]
        rng.shuffle(clocks)
        step = rng.choice(clocks) - 1
        if ch3.reachable(step, clocks, s):
            cases.append((step, tuple(clocks), s, ch3.reference(step, clocks, s)))
    return lambda: cases


def _ch5_cases(seed):
    def cases():
        from ..check import ch5
        from ..net import fabrics
        rng = random.Random(seed)
        yield from ch5._textbook()
        links = {f"l{i}": rng.choice([1, 2.5, 4, 10, 25, 40]) * ch5.GB for i in range(6)}
        flows = [rng.sample(sorted(links), rng.randint(1, 3)) for _ in range(rng.randint(4, 8))]
        used = {name for f in flows for name in f}
        yield "random flows over random links", flows, {k: v for k, v in links.items() if k in used}
        yield ("ring step, shuffled, k=4 fat-tree", *ch5._ring_step(fabrics.fat_tree(4), seed=rng.randint(0, 999)))
        yield ("ring step, shuffled, 2:1 spine-leaf",
               *ch5._ring_step(fabrics.spine_leaf(4, 2, 2, 4), seed=rng.randint(0, 999)))
    return cases


def _ch6(rng):
    from ..check import ch6
    boundary = {"first marked window (alpha = 1)", "floor of 2 packets"}
    cases = [(name, args) for name, args in ch6._cases() if name in boundary]   # the edges stay; more are drawn
    for i in range(5):
        acked = rng.randint(1, 120)
        marked = 0 if i == 0 else rng.randint(1, acked)                         # one window without marks
        cwnd = float(acked + rng.randint(1, 80)) if i == 2 else float(rng.randint(2, 200))   # one: acked < cwnd
        g = rng.choice([1 / 8, 1 / 4, 1 / 32]) if i == 3 else rng.choice([1 / 16, 1 / 8, 1 / 4, 1 / 32])
        cases.append((f"drawn window {i + 1}", (round(rng.uniform(0.0, 1.0), 4), cwnd, acked, marked, g)))
    flows, gbit, k, fabric_seed = rng.randint(2, 4), rng.choice([10, 25, 40]), rng.choice([30, 40, 65, 90]), \
        rng.randint(0, 999)

    def fabric_windows():
        from ..fabric import ECN, Congestion, long_flows
        run = long_flows(flows, gbit * 1e9 / 8,
                         switch=Congestion("dctcp", ecn=ECN.dctcp(k * 1500), seed=fabric_seed), duration=0.004)
        sender = run.flows[0].sender
        return sender.g, sender.windows, sender.alphas
    return {"netlab.check.ch6._cases": lambda: iter(cases), "netlab.check.ch6._fabric_windows": fabric_windows}


# networks slow enough that the all-reduces, not the backward pass, set the step: there a bucket that
# does not wait for the one before it, or no overlap at all, misses by far more than the 1 % tolerance
SLOW_NETWORKS = [("1Gbit/s", "50us"), ("1Gbit/s", "20us"), ("2.5Gbit/s", "50us"), ("5Gbit/s", "20us"),
                 ("10Gbit/s", "50us")]
# networks fast enough that every bucket but the last hides behind the backward pass
FAST_NETWORKS = [("100Gbit/s", "2us"), ("200Gbit/s", "1us"), ("400Gbit/s", "1us")]


def _ch7(rng):
    """Three measured regimes, as in the public cases: communication-bound, compute-bound, and a batch of 2
    (the optimizer about a sixth of the compute); the definition's hidden case stays."""
    ranks = rng.sample(range(2, 6), 3)
    caps = [1, 20_000, 50_000, 100_000, 200_000, 400_000]
    return {"cases": [(ranks[0], *rng.choice(SLOW_NETWORKS), rng.choice(caps)),
                      (ranks[1], *rng.choice(FAST_NETWORKS), rng.choice(caps[1:])),
                      (ranks[2], *rng.choice(FAST_NETWORKS + SLOW_NETWORKS[3:]), rng.choice(caps[1:]), 2)]}


def _ch9(rng):
    from ..check import ch9
    cases = [(name, args) for name, args in ch9.CASES]               # the edges stay; more are drawn
    for i in range(6):
        size = rng.choice([2, 4, 8])
        buffer = [rng.randrange(16) for _ in range(rng.randint(0, size))]
        event = rng.choice(["send", "clean", "clean", "marked", "trimmed", "lost"])
        cases.append((f"drawn step {i + 1} ({event})", (buffer, event, rng.randrange(16), size)))
    fabric = dict(ch9.FABRIC, seed=rng.randint(0, 999), at=rng.choice([0.5e-3, 1e-3, 2e-3]),
                  link=rng.choice(["leaf0->spine0", "leaf0->spine2", "leaf1->spine3"]))
    return {"netlab.check.ch9.CASES": cases, "netlab.check.ch9.FABRIC": fabric}


def draw(chapter: str, seed: int | None) -> tuple[dict, dict]:
    """(keyword arguments for the check, {module attribute: value} to patch) for one chapter."""
    validate.choice(chapter, "chapter", BY_CHAPTER)
    if seed is None:
        return {}, {}
    rng = seeds.python_random(seed, seeds.VARIANTS, list(BY_CHAPTER).index(chapter))
    if chapter == "ch1":
        return _ch1(rng), {}
    if chapter == "ch2":
        return _ch2(rng), {}
    if chapter == "ch3":
        return {"staleness_bounds": (rng.choice([1, 2]), 3)}, {"netlab.check.ch3._cases": _ch3_cases(rng)}
    if chapter == "ch4":
        cases = [(rng.randint(5, 40), rng.choice([0.1, 0.2, 0.3]), rng.randint(0, 10**6)),
                 (rng.randint(500, 3000), rng.choice([0.01, 0.02, 0.05]), rng.randint(0, 10**6)),
                 (rng.randint(50, 500), rng.choice([0.05, 0.1]), rng.randint(0, 10**6)),
                 (rng.randint(3, 9), 0.01, rng.randint(0, 10**6))]          # k = 1: the max(1, .) edge
        return {}, {"netlab.check.ch4.CASES": cases}
    if chapter == "ch5":
        return {}, {"netlab.check.ch5._cases": _ch5_cases(rng.randint(0, 10**6))}
    if chapter == "ch6":
        return {}, _ch6(rng)
    if chapter == "ch7":
        return _ch7(rng), {}
    if chapter == "ch9":
        return {}, _ch9(rng)
    return {}, {}                                   # ch8: one cluster (see the module docstring)


def apply(patches: dict) -> None:
    """Set module attributes named 'package.module.ATTR' (in the grading subprocess only)."""
    import importlib
    for dotted, value in patches.items():
        module, _, attr = dotted.rpartition(".")
        setattr(importlib.import_module(module), attr, value)


def run_check(chapter: str, fn, seed: int | None = None):
    """Judge `fn` with the chapter's check, on its public cases or on the variant drawn from `seed`."""
    import netlab.check as check
    kwargs, patches = draw(chapter, seed)
    apply(patches)
    return getattr(check, BY_CHAPTER[chapter].check)(fn, **kwargs)
