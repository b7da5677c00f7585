"""Virtual time on an uncontended network against the closed-form cost of every algorithm (1 %)."""
import math

import pytest

import netlab
from netlab import collectives as C
from netlab.collectives import cost

CALL = {"allreduce": C.allreduce, "broadcast": C.broadcast, "reduce": C.reduce,
        "allgather": C.all_gather, "reduce_scatter": C.reduce_scatter, "alltoall": C.all_to_all}
WHOLE = ("allgather", "alltoall")      # S made of p equal parts (nccl-tests' S is the whole)
SIZES = [1 << 10, 64 << 10, 4 << 20, 256 << 20]            # 1 KiB .. 256 MiB (nccl-tests' S)


@pytest.fixture(scope="module", autouse=True)
def big_pool():
    netlab.get_cluster(16)


def sweep(comm, collective, algo, sizes, options):
    """Size-only runs (no payload: the clock is identical, see test_virtual_time): one time per size."""
    out = []
    for nbytes in sizes:
        p = comm.world_size
        count = nbytes // 4 // p * (p if collective == "alltoall" else 1) if collective in WHOLE else nbytes // 4
        start = comm.now()
        CALL[collective](comm, None, algo=algo, count=count, **options)
        out.append(comm.now() - start)
        comm.restart_clock()                                # the next size starts on idle ports
    return out


def measured(collective, algo, p, net, sizes=SIZES):
    options = {"root": p - 1} if collective in ("broadcast", "reduce") else {}
    res = netlab.run(sweep, collective, algo, sizes, options, ranks=p, network=net)
    return [max(times) for times in zip(*res.values)]


CASES = [pytest.param(c, a, marks=pytest.mark.slow) if (c, a) == ("allreduce", "naive") else (c, a)  # naive: p^2 messages
         for c, algos in C.ALGORITHMS.items() for a in algos]


@pytest.mark.parametrize("collective, algo", CASES)
def test_virtual_time_matches_the_formula_within_one_percent(collective, algo):
    hierarchical = algo.startswith("hierarchical")
    worlds = range(2, 17, 2) if hierarchical else range(2, 17)
    for p in worlds:
        net = netlab.network("100Gbit/s", "5us", ranks_per_host=2 if hierarchical else 1, intra="NVLink3")
        for nbytes, t in zip(SIZES, measured(collective, algo, p, net)):
            s = nbytes // 4 // (p if collective in WHOLE else 1) * 4 * (p if collective in WHOLE else 1)
            predicted = cost.time(collective, algo, p, s, network=net)
            assert t == pytest.approx(predicted, rel=0.01), f"p={p} S={s}: measured {t}, formula {predicted}"


@pytest.mark.parametrize("collective, algo", [("allreduce", "ring"), ("allreduce", "recursive_doubling"),
                                              ("allreduce", "halving_doubling"), ("allreduce", "tree"),
                                              ("reduce_scatter", "ring"), ("reduce_scatter", "recursive_halving"),
                                              ("reduce", "tree"), ("allreduce", "hierarchical_rail")])
def test_gamma_reduction_cost(collective, algo):
    per = 2 if algo.startswith("hier") else 1
    net = netlab.network("10Gbit/s", "5us", ranks_per_host=per, gamma=1 / 5e9)   # sums at 5 GB/s
    worlds = (4, 8) if "recursive" in algo or "halving" in algo else (4, 6, 8)   # exact for 2^k (see cost.py)
    for p in worlds:
        for nbytes, t in zip(SIZES[1:], measured(collective, algo, p, net, SIZES[1:])):
            assert t == pytest.approx(cost.time(collective, algo, p, nbytes, network=net), rel=0.01)


def test_ring_busbw_approaches_the_link_bandwidth_for_large_messages():
    net = netlab.network("100Gbit/s", "5us")
    p, nbytes = 8, 256 << 20
    t = measured("allreduce", "ring", p, net, [nbytes])[0]
    assert cost.busbw("allreduce", p, nbytes, t) / net.nic.bandwidth > 0.99
    assert cost.busbw("allreduce", p, 1 << 10, measured("allreduce", "ring", p, net, [1 << 10])[0]) < 0.01 * 12.5e9


def test_busbw_factors_are_nccl_tests():
    assert cost.busbw("allreduce", 8, 1e9, 1.0) == pytest.approx(1.75e9)
    assert cost.busbw("allgather", 8, 1e9, 1.0) == pytest.approx(0.875e9)
    assert cost.busbw("reduce_scatter", 4, 1e9, 1.0) == pytest.approx(0.75e9)
    assert cost.busbw("broadcast", 8, 1e9, 1.0) == cost.busbw("reduce", 8, 1e9, 1.0) == pytest.approx(1e9)


def test_crossover_matches_the_textbook_expression_and_the_measurement():
    alpha, bw, p = 5e-6, 50e9, 8
    net = netlab.network("400Gbit/s", "5us")
    lg = math.log2(p)
    textbook = alpha * (2 * (p - 1) - lg) / ((lg - 2 * (p - 1) / p) / bw)   # ring vs recursive doubling
    n_star = cost.crossover("allreduce", "ring", "recursive_doubling", p, network=net)
    assert n_star == pytest.approx(textbook, rel=1e-9)                         # 2.2 MB
    below, above = int(n_star / 2) // 4 * 4, int(n_star * 2) // 4 * 4
    ring = measured("allreduce", "ring", p, net, [below, above])
    rd = measured("allreduce", "recursive_doubling", p, net, [below, above])
    assert rd[0] < ring[0] and ring[1] < rd[1]
    assert cost.crossover("allreduce", "ring", "halving_doubling", 8, network=net) is None   # same n/B term
