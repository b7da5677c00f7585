"""Exercise 3 (SSP wait condition): the cases are exactly the states SSP can reach; every rule that agrees with SSP
on them passes, however it treats states SSP never reaches, and every typical wrong rule fails with a message that
names the case and what SSP does there, not the formula."""
import itertools
import math

import pytest

import netlab.check as check
from netlab.check import ch3
from solutions import ch3_ssp_wait

right = ch3_ssp_wait.ssp_ready


def ssp_server_queries(workers: int, s, top: int) -> set:
    """Every (clocks, asker) an SSP server is asked about, over every order of events: an exhaustive search of a
    server's states (clocks; who computes, who waits) in which any computing worker may push next, and after each
    push every waiting worker is asked again (netlab.ps.server._release). Clocks stop at `top`."""
    start = (tuple([0] * workers), tuple([True] * workers))          # (clocks, computing?)
    seen, todo, queries = {start}, [start], set()
    while todo:
        clocks, running = todo.pop()
        for w in range(workers):
            if not running[w] or clocks[w] >= top:
                continue
            c = list(clocks)
            c[w] += 1
            run = list(running)
            run[w] = False
            for u in range(workers):                                  # the server re-asks for every held worker
                if not run[u]:
                    queries.add((tuple(c), u))
                    if right(c[u] - 1, list(c), s):
                        run[u] = True
            state = (tuple(c), tuple(run))
            if state not in seen:
                seen.add(state)
                todo.append(state)
    return queries


@pytest.mark.parametrize("workers,s", [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (4, 1)])
def test_the_reachable_states_are_what_an_ssp_server_is_asked(workers, s):
    top = 5 if workers < 4 else 4
    queries = ssp_server_queries(workers, s, top)
    described = {(clocks, a) for clocks in itertools.product(range(top + 1), repeat=workers)
                 for a in range(workers) if clocks[a] >= 1 and ch3.reachable(clocks[a] - 1, clocks, s)}
    assert queries == described


def test_the_cases_are_reachable_and_cover_every_order_and_asker():
    cases = ch3._cases()
    assert all(ch3.reachable(step, clocks, s) for step, clocks, s, _ in cases)
    assert all(want == right(step, list(clocks), s) for step, clocks, s, want in cases)
    finite = [(step, clocks, s) for step, clocks, s, _ in cases if not math.isinf(s)]
    assert {len(c) for _, c, _ in finite} == {1, 2, 3, 4} and {s for _, _, s in finite} == {0, 1, 2, 3}
    assert (0, (1, 2, 0), 1) in finite and (0, (2, 1, 0), 1) in finite          # the spread rule's states
    assert any(math.isinf(s) for _, _, s, _ in cases)
    assert sum(not want for *_, want in cases) > 100 and sum(want for *_, want in cases) > 100


# ---- rules equal to SSP on every reachable state: all pass ---------------------------------------------------------

def gap_form(step, clocks, staleness):                   # "this worker minus the slowest <= s"
    return step + 1 - min(clocks) <= staleness


def every_worker(step, clocks, staleness):
    return all(c >= step + 1 - staleness for c in clocks)


def not_at_the_limit(step, clocks, staleness):           # equal on reachable states only: min >= step - s there
    return min(clocks) != step - staleness


def without_the_asker(step, clocks, staleness):
    others = [c for c in clocks if c != step + 1] or [step + 1]
    return min(others) >= step + 1 - staleness


def with_a_loop(step, clocks, staleness):
    if math.isinf(staleness):
        return True
    slowest = clocks[0]
    for c in clocks:
        if c < slowest:
            slowest = c
    return slowest + staleness > step


EQUIVALENT = [right, gap_form, every_worker, not_at_the_limit, without_the_asker, with_a_loop]


@pytest.mark.parametrize("answer", EQUIVALENT, ids=[a.__name__ for a in EQUIVALENT])
def test_every_rule_equal_on_reachable_states_passes_the_cases(answer):
    assert all(bool(answer(step, list(clocks), s)) == want for step, clocks, s, want in ch3._cases())


@pytest.mark.slow
def test_a_rule_equal_only_on_reachable_states_passes_the_whole_check():
    assert not not_at_the_limit(3, [4, 0], 1) == right(3, [4, 0], 1)    # they differ where SSP never goes
    check.ssp_wait(not_at_the_limit).assert_passed()


# ---- typical wrong rules: every one fails, told what SSP does on one of its cases -----------------------------------

def spread(step, clocks, staleness):                     # "the fastest minus the slowest <= s"
    return max(clocks) - min(clocks) <= staleness


def off_by_one(step, clocks, staleness):
    return min(clocks) >= step - staleness


def step_minus_slowest(step, clocks, staleness):
    return step - min(clocks) <= staleness


def strict(step, clocks, staleness):
    return min(clocks) > step + 1 - staleness


def never_waits(step, clocks, staleness):
    return True


def ignores_s(step, clocks, staleness):
    return min(clocks) >= step + 1


def first_worker(step, clocks, staleness):               # the first in the list, not the slowest
    return clocks[0] >= step + 1 - staleness


def mean_clock(step, clocks, staleness):
    return sum(clocks) / len(clocks) >= step + 1 - staleness


def integer_bound(step, clocks, staleness):              # breaks on s = inf
    return min(clocks) >= step + 1 - int(staleness)


def says_yes(step, clocks, staleness):
    return "yes" if min(clocks) >= step + 1 - staleness else "no"


def calls_netlab(step, clocks, staleness):
    from netlab.ps.consistency import ssp_ready as rule
    return rule(step, clocks, staleness)


def calls_netlab_package(step, clocks, staleness):
    import netlab.ps
    return netlab.ps.ssp_ready(step, clocks, staleness)


WRONG = [
    (spread, "The bound is between the worker that asks and the slowest"),
    (off_by_one, "never makes a worker wait"),
    (step_minus_slowest, "never makes a worker wait"),
    (strict, "exactly as far behind as s allows"),
    (never_waits, "never makes a worker wait"),
    (ignores_s, "waits as BSP does"),
    (first_worker, "changes with the order of the clocks"),
    (mean_clock, "sometimes lets a worker start"),
    (integer_bound, "OverflowError"),
    (says_yes, "expected True or False"),
    (calls_netlab, "netlab.ps.consistency.ssp_ready"),
    (calls_netlab_package, "netlab.ps.consistency.ssp_ready"),
]


@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_rule_is_rejected_and_told_what_ssp_does(answer, words):
    result = check.ssp_wait(answer)
    assert not result.passed, result
    assert words in result.message, result.message
    assert "step + 1 - s" not in result.message and ">=" not in result.message      # never the rule itself


def test_the_spread_rule_differs_on_a_state_a_server_reaches():
    """Three workers at three speeds (per step: B 1, A 2, C 10 time units), s = 1: B pushes steps 0 and 1 and waits at
    clock 2 with C still at 0; then A pushes step 0. SSP lets A start step 1 (it is one step ahead of the slowest);
    the spread rule holds it until C pushes, 8 time units later."""
    queries = ssp_server_queries(3, 1, 3)
    assert ((1, 2, 0), 0) in queries                                 # A (worker 0) asks at clocks [1, 2, 0]
    assert right(0, [1, 2, 0], 1) and not spread(0, [1, 2, 0], 1)


@pytest.mark.slow
def test_a_rule_right_on_the_listed_states_but_not_beyond_fails_inside_the_servers():
    def sneaky(step, clocks, s):                          # right while the slowest is below 6, never waits after
        return min(clocks) >= 6 or min(clocks) >= step + 1 - s
    result = check.ssp_wait(sneaky)
    assert not result.passed and "inside real servers" in result.message, result.message
    assert [row for row in result.rows if row["step"] == "run" and row["ok"] == "no"]
