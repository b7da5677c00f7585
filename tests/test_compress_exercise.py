"""Exercise 4: the untouched stub fails its check, the reference passes, common mistakes are named."""
import torch

import netlab.check as check
from solutions import ch4_topk_ef


def test_ch4_stub_fails_and_reference_passes():
    stub = check.topk_error_feedback()
    assert not stub.passed and "not implemented" in stub.message
    check.topk_error_feedback(ch4_topk_ef.topk_with_error_feedback, steps=100).assert_passed()


def test_ch4_check_names_the_mistake():
    def no_residual_added(grad, residual, ratio):
        k = max(1, round(ratio * grad.numel()))
        idx = torch.topk(grad.abs(), k).indices
        kept = grad.clone()
        kept[idx] = 0
        return idx, grad[idx], kept + residual

    def residual_dropped(grad, residual, ratio):
        idx, values, _ = ch4_topk_ef.topk_with_error_feedback(grad, residual, ratio)
        return idx, values, torch.zeros_like(grad)

    def one_too_many(grad, residual, ratio):
        return ch4_topk_ef.topk_with_error_feedback(grad, residual, ratio * 1.5)

    for answer, words in ((no_residual_added, "add the residual"), (residual_dropped, "keep what was not sent"),
                          (one_too_many, "expected k")):
        result = check.topk_error_feedback(answer)
        assert not result.passed and words in result.message, result.message
