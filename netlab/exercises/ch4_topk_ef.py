"""Exercise 4 (chapter 4): top-k sparsification with error feedback.

Write ``topk_with_error_feedback(grad, residual, ratio)``: one step of top-k with error feedback on one
rank. Each step a rank holds its gradient and the residual it did not send before, and:

    1. adds the residual to the gradient;
    2. keeps the k = max(1, round(ratio * d)) elements of largest magnitude of that sum;
    3. keeps as its new residual the sum with the kept elements set to zero (they were sent).

Arguments:
    grad      -- this step's gradient: a flat fp32 torch tensor of d elements
    residual  -- what was not sent before: a flat fp32 tensor of d elements (zeros at the first step)
    ratio     -- the fraction of elements to send, 0 < ratio <= 1 (float)

Return ``(indices, values, new_residual)``: the k kept positions (any integer dtype, any order), their
values (fp32, in the same order as the indices), and the new residual (d elements). Do not change
`grad` or `residual` in place. The ranks then all-gather every rank's indices and values (8 bytes per
kept element) and add them up; the check compares your function with netlab's own top-k on single
tensors, then trains with it on real ranks.

Write ``import torch`` inside your function: the check calls it on a rank, where torch lives.

Hint: "largest magnitude" means largest absolute value: a large negative element matters as much as a
large positive one.

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.topk_error_feedback())"``.
"""


def topk_with_error_feedback(grad, residual, ratio):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 4: write top-k with error feedback")
