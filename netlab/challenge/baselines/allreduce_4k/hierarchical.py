"""Baseline: the lab's hierarchical all-reduce (netlab.collectives, chapter 5), as it ships.

Inside each server a ring reduce-scatter and a gather put the server's sum on its first accelerator;
those 4 leaders run a ring all-reduce across the NICs; each leader scatters the result and a ring
all-gather spreads it inside its server. One accelerator per server carries all the NIC traffic.
"""
from netlab import collectives


def allreduce(comm, x):
    collectives.allreduce(comm, x, algo="hierarchical", ranks_per_host=comm.network.ranks_per_host)
    return x
