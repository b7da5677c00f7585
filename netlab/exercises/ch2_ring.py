"""Exercise 2 (chapter 2): write the ring all-reduce yourself, from send and receive.

Write ``ring_allreduce(comm, x)``. It runs on every rank at once. `x` is this rank's 1-D float32
tensor of n elements (n may be smaller than the number of ranks, or not divisible by it); when the
function returns, every rank's `x` must hold the element-wise sum of all ranks' x (change it in place,
or return the summed tensor).

Use only ``comm``'s point-to-point calls: ``comm.sendrecv(send_tensor, dst, recv_tensor, src)`` (send
and receive at once: safe in a ring), or ``comm.send`` / ``comm.recv`` / ``comm.isend`` / ``comm.irecv`` +
``comm.wait``. ``comm.rank`` and ``comm.world_size`` (p) tell you where you are; the neighbours are
``(rank + 1) % p`` (right) and ``(rank - 1) % p`` (left). netlab's and torch's own collectives are off limits.

The plan (section 3 of the chapter): cut x into p chunks with ``x.tensor_split(p)`` (a tuple of p views of
x, some possibly empty; change them in place, e.g. ``chunk.add_(buf)``). Then p - 1 reduce-scatter steps:
each rank sends one chunk to its right neighbour and adds the chunk arriving from its left into its own
copy of that chunk, so that afterwards each rank holds one chunk summed over all ranks. Then p - 1
all-gather steps pass those finished chunks around the ring until every rank has all of them. Each
rank sends 2(p - 1) messages of one chunk each; the check also times them against the ring's cost.

Hint: on paper, with 3 ranks, fill in a table: after each step, which ranks' data each chunk of each
rank holds. The table is the schedule; then write it for any rank r and step s.

Check it in the chapter, or: ``python -c "import netlab; print(netlab.check.ring_allreduce())"``.
Beware: ``comm.send`` waits until the receiver is receiving. If every rank sends first...
"""


def ring_allreduce(comm, x):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 2: write the ring all-reduce")
