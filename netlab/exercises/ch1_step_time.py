"""Exercise 1 (chapter 1): predict the time of one data-parallel training step.

Each rank computes for `compute_s` seconds (forward, backward and the optimizer together), then
the ranks sum `grad_bytes` bytes of gradients with a ring all-reduce over links of `bandwidth`
bytes/s (per direction) and one-way latency `latency` seconds. Return the step's time in seconds.

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.step_time())"``.
Hint: a ring all-reduce on p ranks is 2(p - 1) steps; in each, every rank sends 1/p of the data.
"""


def predict_step_time(compute_s: float, grad_bytes: int, ranks: int, bandwidth: float, latency: float) -> float:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1: write the step-time model")
