"""Exercise 7 (chapter 7): predict a step whose gradient buckets are all-reduced during the backward pass.

Write ``predict_overlapped_step(bucket_bytes, ready_s, compute_s, optimizer_s, ranks, bandwidth, latency)``
and return the step's time in seconds, from the start of the forward pass to the end of the optimizer.

Arguments:
    bucket_bytes -- bytes of each gradient bucket, in the order DDP launches them (list of int)
    ready_s      -- when each bucket's last gradient is ready, in seconds from the forward's start (list)
    compute_s    -- seconds of forward + backward; the backward pass runs on no matter what the network does,
                    and it may go on after the last bucket is ready (float)
    optimizer_s  -- seconds of the optimizer (float)
    ranks        -- how many ranks, p >= 1 (int)
    bandwidth    -- bytes per second of each link, per direction (float)
    latency      -- one-way latency of a message, in seconds (float)

Each bucket is summed with a ring all-reduce over the ranks (chapter 2's cost). The all-reduces run one
at a time, in bucket order, on a communication stream beside the backward pass. The optimizer runs once
the last all-reduce and the backward pass have both finished.

The check measures bucketed steps on real ranks (communication-bound, latency-bound, compute-bound, and
one with a small batch, where the optimizer matters) and adds one case where the backward pass outlasts
every all-reduce.

Hint: draw the two streams, compute and communication, on one time axis for two buckets, once with a
slow network and once with a fast one.

Check it in the chapter, or with ``python -c "import netlab.check as c; print(c.overlapped_step_time())"``.
"""


def predict_overlapped_step(bucket_bytes: list, ready_s: list, compute_s: float, optimizer_s: float,
                            ranks: int, bandwidth: float, latency: float) -> float:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7: write the bucket pipeline")
