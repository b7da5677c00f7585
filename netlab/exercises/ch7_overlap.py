"""Exercise 7 (chapter 7): predict a step whose gradient buckets are all-reduced during the backward pass.

Bucket k (in the order DDP launches them) holds ``bucket_bytes[k]`` bytes and is ready
``ready_s[k]`` seconds after the forward pass starts. Each bucket is summed with a ring all-reduce
over `ranks` ranks (links of `bandwidth` bytes/s per direction, one-way `latency` seconds); the
all-reduces run one at a time, in bucket order, beside the backward pass, which takes
``compute_s`` seconds (forward + backward) no matter what the network does. After the last
all-reduce and the backward pass both finish, the optimizer runs for ``optimizer_s``.
Return the step's time in seconds.

Check it in the chapter, or with ``python -c "import netlab.check as c; print(c.overlapped_step_time())"``.
Hint: a bucket starts at the later of its ready time and the previous bucket's end.
"""


def predict_overlapped_step(bucket_bytes: list, ready_s: list, compute_s: float, optimizer_s: float,
                            ranks: int, bandwidth: float, latency: float) -> float:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 7: write the bucket pipeline")
