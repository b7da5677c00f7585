"""Exercise 1 (step time): typical wrong answers, written as a student would, are all rejected with a message
that names the term that is wrong; right answers, however written, pass.

The measured steps are cached per case (virtual time: the same every run), so the suite measures each case once.
"""
import math

import pytest

import netlab.check as check
from netlab.check import ch1
from solutions import ch1_step_time

right = ch1_step_time.predict_step_time


def ring_terms(c, n, p, B, a):
    """The student's own pieces: compute, 2(p-1) latencies, 2(p-1)/p of the bytes (0 on one node)."""
    if p == 1:
        return c, 0.0, 0.0
    return c, 2 * (p - 1) * a, 2 * (p - 1) / p * n / B


def milliseconds(c, n, p, B, a):
    return 1e3 * right(c, n, p, B, a)


def bits(c, n, p, B, a):
    c, lat, bw = ring_terms(c, n, p, B, a)
    return c + lat + 8 * bw


def bandwidth_over_8(c, n, p, B, a):
    c, lat, bw = ring_terms(c, n, p, B, a)
    return c + lat + bw / 8


def reduce_scatter_only(c, n, p, B, a):             # half the messages and half the bytes
    c, lat, bw = ring_terms(c, n, p, B, a)
    return c + lat / 2 + bw / 2


def half_the_bytes(c, n, p, B, a):
    c, lat, bw = ring_terms(c, n, p, B, a)
    return c + lat + bw / 2


def no_latency(c, n, p, B, a):
    return c + ring_terms(c, n, p, B, a)[2]


def p_minus_1_latency(c, n, p, B, a):               # one pass of the ring's latency
    return c + (p - 1) * a + ring_terms(c, n, p, B, a)[2]


def tree_latency(c, n, p, B, a):                    # a tree's reduce + broadcast: 2 ceil(log2 p) messages
    steps = 2 * math.ceil(math.log2(p)) if p > 1 else 0
    return c + steps * a + ring_terms(c, n, p, B, a)[2]


def log_latency(c, n, p, B, a):
    return c + math.log2(p) * a + ring_terms(c, n, p, B, a)[2]


def whole_gradient_twice(c, n, p, B, a):
    c, lat, _ = ring_terms(c, n, p, B, a)
    return c + lat + (2 * n / B if p > 1 else 0.0)


def no_compute(c, n, p, B, a):
    _, lat, bw = ring_terms(c, n, p, B, a)
    return lat + bw


def overlapped(c, n, p, B, a):                      # as if the all-reduce ran during the compute
    c, lat, bw = ring_terms(c, n, p, B, a)
    return max(c, lat + bw)


def one_node_sends(c, n, p, B, a):                  # forgot that one node has nothing to send
    return right(c, n, p, B, a) if p > 1 else c + n / B


def off_by_one_steps(c, n, p, B, a):                # 2p steps instead of 2(p-1)
    return c + 2 * p * a + 2 * n / B if p > 1 else c


def calls_netlab_cost(c, n, p, B, a):
    from netlab.collectives import cost
    from netlab.net.network import Link
    return c + (cost.ring_allreduce(p, n, Link(B, a)) if p > 1 else 0.0)


def calls_the_check(c, n, p, B, a):
    from netlab.check.ch1 import terms as t
    return sum(t(c, n, p, B, latency=a))


WRONG = [
    (milliseconds, "1000 times"),
    (bits, "do not convert to bits"),
    (bandwidth_over_8, "already in bytes/s"),
    (reduce_scatter_only, "one phase"),
    (half_the_bytes, "half the bytes"),
    (no_latency, "latency term is missing"),
    (p_minus_1_latency, "one phase of the ring only"),
    (tree_latency, "as a tree's does"),
    (log_latency, "as a tree's does"),
    (whole_gradient_twice, "whole gradients"),
    (no_compute, "compute is missing"),
    (overlapped, "compute first, then all-reduce"),
    (one_node_sends, "one node"),
    (off_by_one_steps, "latency term is off"),
    (calls_netlab_cost, "netlab.collectives.cost.ring_allreduce"),
    (calls_the_check, "netlab.check.ch1.terms"),
]


@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_answer_is_rejected_and_told_what_is_wrong(answer, words):
    result = check.step_time(answer)
    assert not result.passed, result
    assert words in result.message, result.message


def loops(compute_s, grad_bytes, ranks, bandwidth, latency):
    """Right, written another way: walk the ring's steps."""
    t = compute_s
    for phase in ("reduce-scatter", "all-gather"):
        for _ in range(ranks - 1):
            t += latency + grad_bytes / ranks / bandwidth
    return t


@pytest.mark.parametrize("answer", [right, loops])
def test_right_answers_pass(answer):
    check.step_time(answer).assert_passed()


def test_messages_never_state_the_formula():
    for answer, _ in WRONG:
        message = check.step_time(answer).message
        assert "2(p-1)" not in message.replace(" ", "") and "(p-1)/p" not in message.replace(" ", ""), message


def test_every_term_matters_in_the_cases_and_latency_models_differ_on_most():
    """Measured: compute, latency and bandwidth each >= 5 % of every multi-rank step, and the tree-like and
    the (p-1)-latency answers miss by more than the 1 % tolerance on most cases."""
    multi = [c for c in ch1.CASES if c[0] > 1]
    for case in multi:
        compute_s = ch1.measure(*case)[0]
        assert min(ch1.shares(case, compute_s)) >= ch1.TERM_SHARE, case
    for model in (tree_latency, p_minus_1_latency):
        rows = check.step_time(model).rows
        assert sum(r["ok"] == "no" for r in rows) > len(multi) / 2, (model.__name__, rows)
    assert any(c[0] == 1 for c in ch1.CASES)


def test_drawn_variants_keep_every_term_visible():
    """The grader's hidden cases (any seed) keep each term at least 5 % of the step, measured."""
    from netlab.assignment import variants
    for seed in (1, 2):
        cases = variants.draw("ch1", seed)[0]["cases"]
        assert cases[0][0] == 1
        for case in cases[1:]:
            assert min(ch1.shares(case, ch1.measure(*case)[0])) >= ch1.TERM_SHARE, (seed, case)
        result = check.step_time(right, cases=cases).assert_passed()
        assert len(result.rows) == 5
        assert not check.step_time(p_minus_1_latency, cases=cases).passed
