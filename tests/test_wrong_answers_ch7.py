"""Exercise 7 (overlapped step): typical wrong answers, written as a student would, all fail -- on steps measured on
real ranks or on the definition's case whose backward pass outlasts every all-reduce -- and each is told which small
case of the definition it gets wrong; right answers pass. The measured steps are cached per case."""
import math

import pytest

import netlab.check as check
from netlab.check import ch7
from solutions import ch7_overlap

right = ch7_overlap.predict_overlapped_step


def ring(n, p, B, a):
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n / B if p > 1 else 0.0


def chain_end(nbytes, ready, p, B, a):
    end = 0.0
    for n, r in zip(nbytes, ready):
        end = max(r, end) + ring(n, p, B, a)
    return end


def no_optimizer(nbytes, ready, c, o, p, B, a):
    return max(c, chain_end(nbytes, ready, p, B, a))


def optimizer_inside_max(nbytes, ready, c, o, p, B, a):          # the optimizer overlaps the backward pass
    return max(c, chain_end(nbytes, ready, p, B, a) + o)


def no_queue(nbytes, ready, c, o, p, B, a):                      # every bucket starts when it is ready
    return max([c] + [r + ring(n, p, B, a) for n, r in zip(nbytes, ready)]) + o


def no_overlap(nbytes, ready, c, o, p, B, a):                    # all-reduces after the backward pass
    return c + sum(ring(n, p, B, a) for n in nbytes) + o


def sum_of_everything(nbytes, ready, c, o, p, B, a):             # compute + communication + optimizer
    return c + chain_end(nbytes, ready, p, B, a) + o


def ignores_ready(nbytes, ready, c, o, p, B, a):                 # all buckets ready at the start
    return max(c, sum(ring(n, p, B, a) for n in nbytes)) + o


def last_bucket_only(nbytes, ready, c, o, p, B, a):              # only the last bucket is exposed
    return max(c, ready[-1] + ring(nbytes[-1], p, B, a)) + o


def one_phase_ring(nbytes, ready, c, o, p, B, a):                # half the ring's cost per bucket
    end = 0.0
    for n, r in zip(nbytes, ready):
        end = max(r, end) + ring(n, p, B, a) / 2
    return max(c, end) + o


def one_latency_per_bucket(nbytes, ready, c, o, p, B, a):        # alpha once per bucket, not per ring step
    end = 0.0
    for n, r in zip(nbytes, ready):
        end = max(r, end) + a + (2 * (p - 1) / p * n / B if p > 1 else 0.0)
    return max(c, end) + o


def whole_buckets_at_once(nbytes, ready, c, o, p, B, a):         # one all-reduce of all the bytes at the end
    return max(c, ready[-1] + ring(sum(nbytes), p, B, a)) + o


def calls_netlab(nbytes, ready, c, o, p, B, a):
    from netlab.dataparallel import overlap
    from netlab.net.network import Link
    return overlap.pipeline_time(nbytes, ready, c, p, link=Link(B, a), optimizer_s=o)["total_s"]


def calls_netlab_cost(nbytes, ready, c, o, p, B, a):
    from netlab.collectives.cost import ring_allreduce as cost
    from netlab.net.network import Link
    end = 0.0
    for n, r in zip(nbytes, ready):
        end = max(r, end) + (cost(p, n, Link(B, a)) if p > 1 else 0.0)
    return max(c, end) + o


WRONG = [
    (no_optimizer, "the optimizer adds nothing to this step"),
    (optimizer_inside_max, "the optimizer still starts only when the backward pass ends"),
    (no_queue, "a bucket starts when the one before it has ended"),
    (no_overlap, "is hidden"),
    (sum_of_everything, "with nothing to send"),
    (ignores_ready, "cannot start before the bucket is ready"),
    (last_bucket_only, "a bucket starts when the one before it has ended"),
    (one_phase_ring, "one bucket alone is off"),
    (one_latency_per_bucket, "one bucket alone is off"),
    (whole_buckets_at_once, "a bucket starts when the one before it has ended"),
    (calls_netlab, "netlab.dataparallel.overlap.pipeline_time"),
    (calls_netlab_cost, "netlab.collectives.cost.ring_allreduce"),
]


@pytest.mark.slow
@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_answer_is_rejected_and_told_what_is_wrong(answer, words):
    result = check.overlapped_step_time(answer)
    assert not result.passed, result
    assert words in result.message, result.message
    assert "max(" not in result.message


@pytest.mark.slow
def test_the_cases_hold_every_regime_the_mistakes_need():
    """Measured: a communication-bound case (most of the step after the backward pass), a compute-bound one (all
    communication but the last bucket hidden), an optimizer worth more than the tolerance; and the definition's
    case where the whole communication hides behind the backward pass."""
    from netlab.units import parse_bandwidth, parse_time
    exposed, optimizer = [], []
    for case in ch7.CASES:
        nbytes, ready, c, o, step = ch7.measure(case)
        exposed.append((step - o - c) / step)
        optimizer.append(o / step)
    assert max(exposed) > 0.5 and min(exposed) < 0.01 and max(optimizer) > 0.05
    for name, nbytes, ready, c, o, p, bw, lat in ch7.SPEC_CASES:
        assert chain_end(nbytes, ready, p, parse_bandwidth(bw), parse_time(lat)) < c - o      # hidden, with room
    # the two answers the issue names fail on the measured cases or the definition's, by more than 1 %
    rows = {a.__name__: check.overlapped_step_time(a).rows for a in (no_optimizer, optimizer_inside_max)}
    assert any(r["ok"] == "no" and r["source"] == "real ranks" for r in rows["no_optimizer"])
    assert [r["source"] for r in rows["optimizer_inside_max"] if r["ok"] == "no"] == \
        ["definition: hidden behind the backward"]


def with_events(bucket_bytes, ready_s, compute_s, optimizer_s, ranks, bandwidth, latency):
    """Right, written another way: a list of (start, end) intervals on the communication stream."""
    stream = []
    for n, r in zip(bucket_bytes, ready_s):
        start = max([r] + [e for _, e in stream])
        steps = 2 * (ranks - 1)
        stream.append((start, start + steps * (latency + n / ranks / bandwidth)))
    done = max([compute_s] + [e for _, e in stream])
    return done + optimizer_s


@pytest.mark.slow
@pytest.mark.parametrize("answer", [right, with_events])
def test_right_answers_pass(answer):
    check.overlapped_step_time(answer).assert_passed()
