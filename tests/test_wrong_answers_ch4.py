"""Exercise 4 (top-k with error feedback): typical wrong answers, written as a student would, are all rejected on
the single tensors (before any training) with a message that names the case and the step that is wrong."""
import pytest
import torch

import netlab.check as check
from netlab.check import ch4
from solutions import ch4_topk_ef

right = ch4_topk_ef.topk_with_error_feedback


def k_of(p, ratio):
    return max(1, round(ratio * p.numel()))


def no_residual_added(grad, residual, ratio):
    idx = torch.topk(grad.abs(), k_of(grad, ratio)).indices
    kept = grad.clone()
    kept[idx] = 0
    return idx, grad[idx], kept + residual


def residual_dropped(grad, residual, ratio):
    idx, values, _ = right(grad, residual, ratio)
    return idx, values, torch.zeros_like(grad)


def one_too_many(grad, residual, ratio):
    p = grad + residual
    idx = torch.topk(p.abs(), k_of(p, ratio) + 1).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def largest_values(grad, residual, ratio):            # forgot the magnitude
    p = grad + residual
    idx = torch.topk(p, k_of(p, ratio)).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def values_of_the_gradient(grad, residual, ratio):
    p = grad + residual
    idx = torch.topk(p.abs(), k_of(p, ratio)).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, grad[idx], rest


def chosen_on_the_gradient(grad, residual, ratio):    # picks on |grad|, sends grad + residual there
    p = grad + residual
    idx = torch.topk(grad.abs(), k_of(p, ratio)).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def old_residual_lost(grad, residual, ratio):
    p = grad + residual
    idx = torch.topk(p.abs(), k_of(p, ratio)).indices
    rest = grad.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def floor_k(grad, residual, ratio):                   # int() where the spec rounds
    p = grad + residual
    idx = torch.topk(p.abs(), max(1, int(ratio * p.numel()))).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def no_floor_of_one(grad, residual, ratio):           # k = 0 when ratio * d < 0.5
    p = grad + residual
    idx = torch.topk(p.abs(), round(ratio * p.numel())).indices
    rest = p.clone()
    rest[idx] = 0
    return idx, p[idx], rest


def residual_negated(grad, residual, ratio):
    idx, values, rest = right(grad, residual, ratio)
    return idx, values, -rest


def residual_keeps_everything(grad, residual, ratio):
    idx, values, _ = right(grad, residual, ratio)
    return idx, values, grad + residual


def dense_instead_of_values(grad, residual, ratio):
    idx, values, rest = right(grad, residual, ratio)
    return idx, torch.zeros_like(grad).index_put_((idx,), values), rest


def values_sorted_apart(grad, residual, ratio):       # indices in one order, values in another
    idx, values, rest = right(grad, residual, ratio)
    return idx.sort().values, values, rest


def calls_netlab(grad, residual, ratio):
    from netlab.compress import Compression, TopK
    from netlab.runtime.comm import Comm
    pipe = Compression.of(TopK(ratio), error_feedback=True)
    pipe.memory.e = residual.clone()
    payload = pipe.encode(Comm(0, 1), grad, 0)
    return payload.tensors[0], payload.tensors[1], pipe.memory.residual()


def calls_the_sparsifier(grad, residual, ratio):
    from netlab.compress.sparsify import TopK as T
    payload = T(ratio).compress(grad + residual)
    idx, values = payload.tensors
    rest = grad + residual
    rest[idx.long()] = 0
    return idx, values, rest


WRONG = [
    (no_residual_added, "add the residual first"),
    (residual_dropped, "keep what was not sent"),
    (one_too_many, "expected k"),
    (largest_values, "not the k largest magnitudes"),
    (values_of_the_gradient, "add the residual first"),
    (chosen_on_the_gradient, "choose after adding the residual"),
    (old_residual_lost, "old residual that was not sent this time is lost"),
    (floor_k, "k = 13"),
    (no_floor_of_one, "k = 1"),
    (residual_negated, "wrong sign"),
    (residual_keeps_everything, "still holds the sent elements"),
    (dense_instead_of_values, "expected k"),
    (values_sorted_apart, "same order as the indices"),
    (calls_netlab, "netlab.compress"),
    (calls_the_sparsifier, "netlab.compress.sparsify.TopK"),
]


@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_answer_is_rejected_on_single_tensors(answer, words):
    result = check.topk_error_feedback(answer, steps=20)
    assert not result.passed, result
    assert words in result.message, result.message
    assert not any("training" in row["test"] for row in result.rows)       # caught before any training
    if "netlab" not in words:
        assert result.message.startswith("d = "), result.message            # the case is named


def test_the_cases_hold_the_edges_the_mistakes_need():
    ks = {(d, r): max(1, round(r * d)) for d, r, _ in ch4.CASES}
    assert any(round(r * d) == 0 for d, r, _ in ch4.CASES)                   # k = max(1, .) matters
    assert any(int(r * d) != round(r * d) for d, r, _ in ch4.CASES)          # rounding, not flooring
    assert all(k < d for (d, _), k in ks.items())


def sort_based(grad, residual, ratio):
    """Right, written another way: argsort by magnitude, numpy-free."""
    p = grad + residual
    k = max(1, round(ratio * p.numel()))
    order = torch.argsort(p.abs(), descending=True)[:k]
    rest = p.clone()
    rest[order] = 0.0
    return order.to(torch.int64), p[order].clone(), rest


@pytest.mark.slow
@pytest.mark.parametrize("answer", [right, sort_based])
def test_right_answers_pass(answer):
    check.topk_error_feedback(answer, steps=100).assert_passed()
