"""Each exercise check names the typical wrong answer it sees (at least three per exercise).

Exercise 4's named mistakes are in test_compress_exercise.py; here exercises 1, 2, 3 and 5. Every
wrong answer below is a mistake students make; the check must fail it AND say which one it is.
"""
import pytest
import torch

import netlab.check as check
from solutions import ch1_step_time, ch3_ssp_wait, ch5_max_min

right = ch1_step_time.predict_step_time


def _ring_terms(compute_s, grad_bytes, ranks, bandwidth, latency):
    return compute_s, 2 * (ranks - 1) * latency, 2 * (ranks - 1) / ranks * grad_bytes / bandwidth


EX1_MISTAKES = [
    (lambda *a: 1e3 * right(*a), "not milliseconds"),
    (lambda *a: (lambda c, lat, bw: c + lat + 8 * bw)(*_ring_terms(*a)), "do not convert to bits"),
    (lambda *a: (lambda c, lat, bw: c + lat / 2 + bw / 2)(*_ring_terms(*a)), "one phase"),
    (lambda *a: (lambda c, lat, bw: c + bw)(*_ring_terms(*a)), "latency term is missing"),
    (lambda c, g, p, b, a: right(c, g, p, b, a) if p > 1 else c + g / b, "one node"),
]


@pytest.mark.parametrize("answer,words", EX1_MISTAKES)
def test_ch1_check_names_the_mistake(answer, words):
    result = check.step_time(answer)
    assert not result.passed and words in result.message, result.message


def test_ch1_check_has_a_one_node_case_and_passes_the_reference():
    result = check.step_time(right).assert_passed()
    assert any(row["ranks"] == 1 for row in result.rows)


def _forgot_allgather(comm, x):
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)


def _whole_vector(comm, x):                     # right sums from p-1 messages of n bytes, not 2(p-1) of n/p
    p = comm.world_size
    acc, buf, send = x.clone(), torch.empty_like(x), x.clone()
    for _ in range(p - 1):
        comm.sendrecv(send, (comm.rank + 1) % p, buf, (comm.rank - 1) % p)
        acc += buf
        send = buf.clone()
    x.copy_(acc)


def _wrong_chunk(comm, x):                      # adds the chunk it received into the chunk it just sent
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(2 * (p - 1)):
        buf = torch.empty_like(chunks[(r - s) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s) % p].add_(buf[:chunks[(r - s) % p].numel()])


def test_ch2_check_names_the_mistake():
    half = check.ring_allreduce(_forgot_allgather, cases=[(4, 4096)])
    assert not half.passed and "all-gather phase is missing" in half.message, half.message
    whole = check.ring_allreduce(_whole_vector, cases=[(4, 4096)])
    assert not whole.passed and "whole vector" in whole.message, whole.message
    wrong = check.ring_allreduce(_wrong_chunk, cases=[(4, 4096)])
    assert not wrong.passed and "no sum of the ranks' data" in wrong.message, wrong.message


EX3_MISTAKES = [
    (lambda step, clocks, s: not clocks or max(clocks) - min(clocks) <= s, "another worker is far ahead"),
    (lambda step, clocks, s: not clocks or min(clocks) >= step - s, "never makes a worker wait"),
    (lambda step, clocks, s: True, "never makes a worker wait"),
    (lambda step, clocks, s: not clocks or min(clocks) >= step + 1, "waits as BSP does"),
    (lambda step, clocks, s: not clocks or min(clocks) > step + 1 - s, "exactly as far behind as s allows"),
]


@pytest.mark.parametrize("answer,words", EX3_MISTAKES)
def test_ch3_check_names_the_mistake(answer, words):
    result = check.ssp_wait(answer)
    assert not result.passed and words in result.message, result.message


def test_ch3_cases_separate_the_rule_from_the_clock_spread():
    spread = EX3_MISTAKES[0][0]
    cases = check.ch3._cases()
    assert any(len(set(clocks)) >= 3 and spread(step, clocks, s) != want for step, clocks, s, want in cases)
    assert all(ch3_ssp_wait.ssp_ready(step, list(clocks), s) == want for step, clocks, s, want in cases)


def _equal_split_of_first_link(flows, capacity):
    return [capacity[f[0]] / sum(f[0] in g for g in flows) for f in flows]


def _one_level(flows, capacity):                # each flow gets its most crowded link's equal share
    load = {}
    for f in flows:
        for link in f:
            load[link] = load.get(link, 0) + 1
    return [min(capacity[link] / load[link] for link in f) for f in flows]


def _forgets_to_freeze(flows, capacity):        # raises every flow until the first link fills, then stops
    load = {}
    for f in flows:
        for link in f:
            load[link] = load.get(link, 0) + 1
    level = min(capacity[link] / n for link, n in load.items())
    return [level] * len(flows)


@pytest.mark.parametrize("answer", [_equal_split_of_first_link, _one_level, _forgets_to_freeze])
def test_ch5_check_names_the_flow_and_the_link(answer):
    result = check.max_min_rates(answer)
    assert not result.passed
    assert "flow " in result.message and "should have frozen it" in result.message, result.message


def test_ch5_equal_split_fails_on_the_ecmp_cases_too():
    result = check.max_min_rates(_equal_split_of_first_link)
    ecmp = [row for row in result.rows if row["case"].startswith("ring step")]
    assert len(ecmp) == 2 and all(row["ok"] == "no" for row in ecmp), result.rows
    assert check.max_min_rates(ch5_max_min.max_min_rates).passed
