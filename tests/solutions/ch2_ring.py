"""Reference solution of Exercise 2 (kept out of the package; CI proves it passes the check)."""
import torch


def ring_allreduce(comm, x):
    p, r = comm.world_size, comm.rank
    chunks = x.view(-1).tensor_split(p)                  # p views, the first n % p one element longer
    right, left = (r + 1) % p, (r - 1) % p
    for s in range(p - 1):                               # reduce-scatter
        incoming = (r - s - 1) % p
        buf = torch.empty_like(chunks[incoming])
        comm.sendrecv(chunks[(r - s) % p], right, buf, left)
        chunks[incoming].add_(buf)                       # in place: chunks are views of x
    for s in range(p - 1):                               # all-gather
        comm.sendrecv(chunks[(r - s + 1) % p], right, chunks[(r - s) % p], left)
    return x
