"""Exercise 4 (chapter 4): top-k sparsification with error feedback.

Each step, a rank holds its gradient `grad` (a flat fp32 tensor of d elements) and the `residual`
it did not send before (same shape, zeros at the start). Write one step of top-k with error
feedback:

    1. add the residual to the gradient;
    2. keep the k = max(1, round(ratio * d)) elements of largest magnitude of that sum;
    3. the new residual is the sum with the kept elements set to zero (they were sent).

Return ``(indices, values, new_residual)``: the kept positions (any integer dtype, any order), their
values (fp32, in the same order), and the new residual. The ranks then all-gather every rank's
indices and values (8 bytes per kept element) and add them up.

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.topk_error_feedback())"``.
"""


def topk_with_error_feedback(grad, residual, ratio):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 4: write top-k with error feedback")
