"""Exercise 1 (chapter 1): predict the time of one data-parallel training step.

Write ``predict_step_time(compute_s, grad_bytes, ranks, bandwidth, latency)`` and return the step's
time in seconds. The step: every rank computes for `compute_s` seconds (forward, backward and the
optimizer together); then the ranks sum their gradients with a ring all-reduce, and the step ends
when the all-reduce does.

Arguments:
    compute_s   -- seconds of compute per rank (float)
    grad_bytes  -- bytes of fp32 gradient each rank holds (int)
    ranks       -- how many ranks, p >= 1 (int; one rank has nobody to sum with)
    bandwidth   -- bytes per second of each link, in each direction (float; not bits)
    latency     -- one-way latency of a message, in seconds (float)

The check measures real steps on real ranks over several networks and compares (within 1 %).

Hint: draw the ring for 3 ranks and follow it step by step through both of its phases: how many
messages does a rank send, how large is each, and which of them must wait for the one before?

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.step_time())"``.
"""


def predict_step_time(compute_s: float, grad_bytes: int, ranks: int, bandwidth: float, latency: float) -> float:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1: write the step-time model")
