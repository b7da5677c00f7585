"""Closed-form alpha-beta(-gamma) cost of every collective algorithm, and nccl-tests' algbw/busbw.

One message of x bytes costs T(x) = alpha + x/B (Hockney); a reduction of x bytes costs x*gamma.
n is the collective's total buffer size S as nccl-tests counts it (the all-gather's output, the
reduce-scatter's input). p ranks, L = ceil(lg p), p' = 2^floor(lg p), r = p - p'.

    all-reduce  naive               2(p-1) T(n) + n g
                ring                2(p-1) a + 2(p-1)/p n/B + (p-1)/p n g
                tree (binomial)     2L T(n) + L n g        (p a power of two; else binomial_reduce)
                recursive doubling  (lg p' + 2[r>0]) T(n) + (lg p' + [r>0]) n g
                halving-doubling    2 lg p' a + 2(p'-1)/p' n/B + (p'-1)/p' n g  (+ 2 T(n) + n g if r>0)
                hierarchical        4(g-1) T_i(n/g) + (g-1)/g n g + ring over N hosts on the NICs
                hierarchical_rail   2(g-1) T_i(n/g) + (g-1)/g n g + ring over N hosts on n/g
    broadcast   naive (p-1) T(n);  tree L T(n);  scatter_allgather: binomial scatter + (p-1) T(n/p)
    reduce      naive (p-1) T(n) + n g;  tree L (T(n) + n g) for p a power of two
    all-gather  ring (p-1) T(n/p);  recursive doubling sum_k T(w_k n/p)
    reduce-sc.  ring (p-1)(T(n/p) + n/p g);  recursive halving sum_k (T(w_k n/p) + w_k n/p g)
    in-network  ina_allreduce: k chunks of c = n/k through a switch that sums at C bytes/s
                2 T(c) + c/C + (k-1) max(T(c), c/C)    (independent of p; -> n/min(B, C) as k grows)
    all-to-all  pairwise, concurrent (p-1) T(n/p) = (p-1) a + (p-1)/p n/B   (n: one rank's buffer)

For powers of two these are the formulas of Thakur, Rabenseifner & Gropp (IJHPCA 19(1), 2005);
for other p they add MPICH's fold (see ``collectives/recursive.py``); w_k counts the chunks of
the largest range a rank sends in round k (2^k, or 2^k + min(r, 2^k) with folded pairs).

netlab's network charges alpha per message at both ports, so a rank that sends k messages in a
row pays k*alpha -- the textbook reading -- and these formulas are exact for it on an uncontended
network (a test checks 1 % for p = 2..16, n = 1 KB..256 MB). Approximations, all stated: chunk
sizes are taken as n/p exactly (the real ones differ by one element); the naive root overlaps each
sum with the next arrival (valid when n*gamma < T(n)); and with gamma > 0 and p not a power of
two, a folded rank's sum can overlap its first exchange, so the recursive algorithms' gamma terms
are exact for powers of two and an upper bound (by at most n*gamma) otherwise.
"""
from __future__ import annotations

import math

from .. import collectives
from ..net.network import Link, Network

BUSBW_FACTOR = {  # nccl-tests doc/PERFORMANCE.md
    "allreduce": lambda p: 2 * (p - 1) / p,
    "allgather": lambda p: (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
    "alltoall": lambda p: (p - 1) / p,          # nccl-tests src/alltoall.cu, AlltoAllGetBw
}


def _fold(p: int) -> tuple[int, int]:
    p2 = 1 << (p.bit_length() - 1)
    return p2, p - p2


def _ceil_lg(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def ring_allreduce(p: int, n: float, link: Link, gamma: float = 0.0) -> float:
    return 2 * (p - 1) * link.latency + 2 * (p - 1) / p * n / link.bandwidth + (p - 1) / p * n * gamma


def alltoall(p: int, n: float, link: Link) -> float:
    """All-to-all of n bytes per rank (p blocks of n/p), pairwise exchange or all at once.

    Every rank's port sends p-1 blocks and receives p-1, one at a time: (p-1)(alpha + n/(p B)).
    Exact on netlab's network with one rank per host (each port carries one message at a time, and
    pairwise rounds are permutations); on a fabric it holds only while the core carries (p-1)/p of
    every rank's bytes at line rate, i.e. with full bisection bandwidth (``netlab.sim.alltoall``).
    Latency-bound below n ~ p alpha B, bandwidth-bound above.
    """
    return (p - 1) * link.time(n / p) if p > 1 else 0.0


def ina_allreduce(p: int, n: float, link: Link, *, chunks: int = 1, capacity: float = math.inf) -> float:
    """In-network aggregation (SwitchML, SHARP): each of p workers streams n bytes to a switch in
    `chunks` chunks of c = n/k and gets the sum back; the switch sums a chunk at `capacity` bytes/s.

    Each worker has its own full-duplex port on the switch (alpha + c/B per chunk and direction),
    so the chunks flow through three stages -- up, aggregate, down -- as a pipeline of k identical
    jobs, and a flow shop of identical jobs ends after the sum of one job's stages plus k-1 times
    the slowest stage: 2 T(c) + c/C + (k-1) max(T(c), c/C). Up and down use opposite directions of
    the port, so at large k the bandwidth term is n/B (the ring's is 2(p-1)/p n/B): twice the busbw.
    A single worker has nothing to sum: 0.
    """
    if p <= 1:
        return 0.0
    c = n / chunks
    up = link.time(c)
    aggregate = c / capacity
    return 2 * up + aggregate + (chunks - 1) * max(up, aggregate)


def _allreduce(algo, p, n, net: Network) -> float:
    T, g = net.nic.time, net.gamma
    p2, r = _fold(p)
    lg2, fold = int(math.log2(p2)), 1 if r else 0
    if algo == "naive":
        return 2 * (p - 1) * T(n) + n * g
    if algo == "ring":
        return ring_allreduce(p, n, net.nic, g)
    if algo == "tree":
        return binomial_reduce(p, T(n), n * g) + _ceil_lg(p) * T(n)
    if algo == "recursive_doubling":
        return (lg2 + 2 * fold) * T(n) + (lg2 + fold) * n * g
    if algo == "halving_doubling":
        return (2 * lg2 * net.nic.latency + 2 * (p2 - 1) / p2 * n / net.nic.bandwidth
                + (p2 - 1) / p2 * n * g + fold * (2 * T(n) + n * g))
    hosts, per = p // net.ranks_per_host, net.ranks_per_host
    Ti = net.intra.time if per > 1 else T
    intra_steps = (per - 1) * Ti(n / per)                  # g-1 ring steps of n/g inside a host
    reductions = (per - 1) / per * n * g                   # the intra-host reduce-scatter's sums
    if algo == "hierarchical":                             # reduce-scatter, gather, scatter, all-gather
        return 4 * intra_steps + reductions + ring_allreduce(hosts, n, net.nic, g)
    if algo == "hierarchical_rail":                        # reduce-scatter and all-gather around rails
        return 2 * intra_steps + reductions + ring_allreduce(hosts, n / per, net.nic, g)
    raise AssertionError(algo)


def binomial_reduce(p: int, message: float, reduction: float) -> float:
    """When the root of a binomial reduce over p ranks holds the sum.

    Its children root subtrees of 1, 2, 4, ... ranks and a last one of p - 2^(L-1); their messages
    queue at the root's port in that order and each is summed on arrival. For p a power of two
    this is L (T(n) + n g); otherwise the last subtree is shallower and some sums overlap arrivals.
    """
    if p <= 1:
        return 0.0
    L = _ceil_lg(p)
    port = clock = 0.0
    for k in range(L):
        ready = binomial_reduce(min(1 << k, p - (1 << k)), message, reduction)
        port = max(ready, port) + message
        clock = max(clock, port) + reduction
    return clock


def _scatter(p: int, n: float, T) -> float:
    """Binomial scatter of p chunks from the root: the root's messages set the pace."""
    L = _ceil_lg(p)
    if L == 0:
        return 0.0
    top = p - (1 << (L - 1))                               # chunks in the first (largest) message
    return T(top * n / p) + sum(T((1 << k) * n / p) for k in range(L - 1))


def _doubling_weights(p: int) -> list[int]:
    """Chunks in the largest range sent in each recursive-doubling round (survivors own 1 or 2)."""
    p2, r = _fold(p)
    return [(1 << k) + min(r, 1 << k) for k in range(int(math.log2(p2)))]


def time(collective: str, algo: str, p: int, nbytes: float, *, network: Network) -> float:
    """Seconds one collective takes on an uncontended network; nbytes = nccl-tests' S."""
    collective, algo = collectives.resolve(collective, algo)
    if p == 1:
        return 0.0
    n, T, g = float(nbytes), network.nic.time, network.gamma
    if collective == "allreduce":
        return _allreduce(algo, p, n, network)
    if collective == "broadcast":
        return {"naive": (p - 1) * T(n), "tree": _ceil_lg(p) * T(n),
                "scatter_allgather": _scatter(p, n, T) + (p - 1) * T(n / p)}[algo]
    if collective == "reduce":
        return {"naive": (p - 1) * T(n) + n * g, "tree": binomial_reduce(p, T(n), n * g)}[algo]
    if collective == "alltoall":
        if network.ranks_per_host > 1:
            raise ValueError("ranks_per_host: the all-to-all's formula is for one rank per host")
        return alltoall(p, n, network.nic)
    p2, r = _fold(p)
    weights = _doubling_weights(p)
    if collective == "allgather":
        if algo == "ring":
            return (p - 1) * T(n / p)
        return sum(T(w * n / p) for w in weights) + (T(n / p) + T(n) if r else 0.0)
    if algo == "ring":                                    # reduce_scatter
        return (p - 1) * (T(n / p) + n / p * g)
    return (sum(T(w * n / p) + w * n / p * g for w in weights)
            + (T(n) + n * g + T(n / p) if r else 0.0))


def algbw(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth in bytes/s: S / t."""
    return nbytes / seconds if seconds > 0 else math.inf


def busbw(collective: str, p: int, nbytes: float, seconds: float) -> float:
    """Bus bandwidth in bytes/s: algbw times nccl-tests' factor, comparable to the link's speed."""
    collective = collectives.resolve_collective(collective)
    return algbw(nbytes, seconds) * BUSBW_FACTOR[collective](p)


def crossover(collective: str, algo_a: str, algo_b: str, p: int, *, network: Network) -> float | None:
    """The message size (bytes) above which the two algorithms swap order, or None if they never do.

    Every formula here is affine in n (a + b n), so the crossover is (a_b - a_a) / (b_a - b_b).
    """
    t = lambda algo, n: time(collective, algo, p, n, network=network)  # noqa: E731
    a_a, a_b = t(algo_a, 0.0), t(algo_b, 0.0)
    b_a, b_b = t(algo_a, 1e9) / 1e9 - a_a / 1e9, t(algo_b, 1e9) / 1e9 - a_b / 1e9
    if math.isclose(b_a, b_b, rel_tol=1e-12):
        return None
    n = (a_b - a_a) / (b_a - b_b)
    return n if n > 0 else None
