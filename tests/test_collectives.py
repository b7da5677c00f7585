"""Every collective algorithm against torch's own collective, on real ranks (Hypothesis over p, length, dtype)."""
import pytest
import torch
import torch.distributed as dist
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import netlab
from netlab import collectives as C

DTYPES = [torch.float32, torch.float16, torch.int32, torch.int64]
NET = netlab.network("10Gbit/s", "5us")


@pytest.fixture(scope="module", autouse=True)
def big_pool():
    netlab.get_cluster(16)          # every world size below runs on a subgroup of one pool


def ours_vs_torch(comm, collective, algo, n, dtype, root, seed):
    """Run one collective both ways on this rank; return (ours, torch's) as int64 or float64 lists."""
    g = torch.Generator().manual_seed(seed * 1000 + comm.rank)
    x = torch.randint(-8, 9, (n,), generator=g).to(dtype)     # small integers: sums exact in any order
    p, grp = comm.world_size, comm.group
    if collective == "allreduce":
        ref = x.clone()
        dist.all_reduce(ref, group=grp)
        ours = C.allreduce(comm, x.clone(), algo=algo)
    elif collective == "broadcast":
        ref = x.clone()
        dist.broadcast(ref, src=root, group=grp)
        ours = C.broadcast(comm, x.clone(), root=root, algo=algo)
    elif collective == "reduce":
        ref = x.clone()
        dist.reduce(ref, dst=root, group=grp)
        ours = C.reduce(comm, x.clone(), root=root, algo=algo)
        if comm.rank != root:
            return [], []
    elif collective == "allgather":
        parts = [torch.empty_like(x) for _ in range(p)]
        dist.all_gather(parts, x, group=grp)
        ref, ours = torch.cat(parts), C.all_gather(comm, x, algo=algo)
    elif collective == "alltoall":                             # p blocks of n: torch's all_to_all_single
        x = torch.randint(-8, 9, (p * n,), generator=g).to(dtype)
        ref = torch.empty_like(x)
        dist.all_to_all_single(ref, x, group=grp)
        ours = C.all_to_all(comm, x, algo=algo)
    else:
        full = x.clone()
        dist.all_reduce(full, group=grp)                       # gloo has no uneven reduce_scatter
        offsets, lengths = C.chunk_bounds(n, p)
        ref = full[int(offsets[comm.rank]):int(offsets[comm.rank] + lengths[comm.rank])]
        ours = C.reduce_scatter(comm, x, algo=algo)
    kind = torch.float64 if dtype.is_floating_point else torch.int64
    return ours.to(kind).tolist(), ref.to(kind).tolist()


FLAT = [(c, a) for c, algos in C.ALGORITHMS.items() for a in algos if not a.startswith("hierarchical")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.slow                       # hypothesis over real ranks
@given(case=st.sampled_from(FLAT), p=st.integers(1, 16), n=st.integers(1, 300), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 10**6), data=st.data())
def test_flat_algorithms_match_torch(case, p, n, dtype, seed, data):
    collective, algo = case
    root = data.draw(st.integers(0, p - 1), label="root")
    res = netlab.run(ours_vs_torch, collective, algo, n, dtype, root, seed, ranks=p, network=NET)
    for rank, (ours, ref) in enumerate(res.values):
        assert ours == ref, f"{collective}/{algo} p={p} n={n} {dtype} root={root}: rank {rank} differs"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(algo=st.sampled_from(["hierarchical", "hierarchical_rail"]), g=st.integers(1, 4), hosts=st.integers(1, 4),
       n=st.integers(1, 300), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 10**6))
@pytest.mark.slow
def test_hierarchical_algorithms_match_torch(algo, g, hosts, n, dtype, seed):
    net = netlab.network("10Gbit/s", "5us", ranks_per_host=g)
    res = netlab.run(ours_vs_torch, "allreduce", algo, n, dtype, 0, seed, ranks=g * hosts, network=net)
    assert all(ours == ref for ours, ref in res.values)


def random_floats(comm, algo, n):
    x = torch.randn(n, generator=torch.Generator().manual_seed(comm.rank))
    ref = x.clone()
    dist.all_reduce(ref, group=comm.group)
    return (C.allreduce(comm, x, algo=algo) - ref).abs().max().item()


@pytest.mark.parametrize("algo", list(C.ALGORITHMS["allreduce"]))
def test_random_floats_agree_to_rounding_on_the_wall_clock(algo):
    net = netlab.network("10Gbit/s", "5us", ranks_per_host=2) if algo.startswith("hier") else None
    res = netlab.run(random_floats, algo, 100_003, ranks=6, network=net)
    assert max(res.values) < 1e-5


def test_unknown_names_and_bad_roots_are_clear_errors():
    with pytest.raises(ValueError, match="^algo: allreduce has no algorithm 'magic'"):
        C.schedule("allreduce", "magic", 4, 10)
    with pytest.raises(ValueError, match="^collective:"):
        C.schedule("alltoall_v2", "ring", 4, 10)
    with pytest.raises(ValueError, match="^ranks_per_host:"):
        list(C.schedule("allreduce", "hierarchical", 6, 10, ranks_per_host=4))
    with pytest.raises(netlab.RankError, match="root: must be a whole number from 0 to 2"):
        netlab.run(lambda comm: C.broadcast(comm, torch.zeros(3), root=5), ranks=3)


def test_every_rank_of_the_ring_sends_2_p_minus_1_messages_of_n_over_p():
    res = netlab.run(lambda comm: C.allreduce(comm, torch.ones(800)), ranks=8, network=NET)
    pattern = res.trace.message_pattern()
    assert len(pattern) == 8 * 2 * 7
    assert {(src, dst) for src, dst, _ in pattern} == {(r, (r + 1) % 8) for r in range(8)}
    assert {nbytes for *_, nbytes in pattern} == {400}
