"""Exercise 2 (chapter 2): write the ring all-reduce yourself, from send and receive.

``ring_allreduce(comm, x)`` runs on every rank. `x` is this rank's 1-D float32 tensor; when the
function returns, every rank's `x` must hold the element-wise sum of all ranks' x (change it in
place). Use only ``comm``'s point-to-point calls: ``comm.sendrecv(send_tensor, dst, recv_tensor, src)``
(send and receive at once: safe in a ring), or ``comm.send`` / ``comm.recv`` / ``comm.isend`` /
``comm.irecv`` + ``comm.wait``. ``comm.rank`` and ``comm.world_size`` tell you where you are.

The plan (section 3 of the chapter): cut x into p chunks (``x.tensor_split(p)`` gives a tuple of p views,
some possibly empty; change them in place, e.g. ``chunk.add_(buf)``); p-1 reduce-scatter steps in which each rank sends one chunk to its right
neighbour and adds the chunk arriving from its left; then p-1 all-gather steps that pass the
finished chunks around. Each rank sends 2(p-1) messages of n/p elements.

Check it in the chapter, or: ``python -c "import netlab; print(netlab.check.ring_allreduce())"``.
Beware: ``comm.send`` waits until the receiver is receiving. If every rank sends first...
"""


def ring_allreduce(comm, x):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 2: write the ring all-reduce")
