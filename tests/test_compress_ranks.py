"""Compressed gradient exchange on real ranks: the sum equals a single-process reference, the network
carries exactly the payload's bytes, int8 sums do not overflow where torch's int8 all-reduce does, and
PowerSGD on ranks equals plain torch in one process (sums and torch.linalg.qr, no netlab collective)."""
import numpy as np
import pytest
import torch
import torch.distributed as dist

import netlab
from netlab import compress, seeds

RANKS = 4
D = 1000
NET = netlab.network("10Gbit/s", "5us")
METHODS = ["none", "fp16", "bf16", "int8", "qsgd", "terngrad", "sign", "majority", "topk", "randomk", "threshold"]
OPTS = {"ratio": 0.05, "tau": 1.0, "bits": 4}


def gradient(rank):
    x = torch.randn(D, generator=torch.Generator().manual_seed(100 + rank))
    return x * 1e-3 if rank == 2 else x            # rank 2: every element below tau (an empty threshold payload)


def exchange(comm, methods):
    out = {}
    for method in methods:
        sync = compress.make(method, world_size=comm.world_size, comm_rank=comm.rank, **OPTS)
        sent = comm.bytes_sent
        summed = sync.sync(comm, gradient(comm.rank), step=3)
        out[method] = (summed, comm.bytes_sent - sent, sync.payload_bytes)
    return out


def reference(method):
    """Sum (or vote) of every rank's decompressed payload, computed in one process."""
    xs = [gradient(r) for r in range(RANKS)]
    # random-k draws the same indices on every rank (the run's seed); stochastic rounding is each rank's own
    seed = [0 if method == "randomk" else seeds.derive(0, seeds.NOISE, r) for r in range(RANKS)]
    comps = [compress.make_compressor(method, seed=seed[r], **OPTS) for r in range(RANKS)]
    shared = None
    if method == "int8":                           # the agreed scale: max over ranks, floor(127/p) levels
        shared = (max(float(x.abs().max()) for x in xs), 127 // RANKS)
    payloads = [c.compress(x, 3, shared) for c, x in zip(comps, xs)]
    return comps[0].aggregate([c.decompress(q) for c, q in zip(comps, payloads)]), [q.nbytes for q in payloads]


@pytest.fixture(scope="module")
def exchanged():
    return netlab.run(exchange, METHODS, ranks=RANKS, network=NET, device=netlab.device("cpu-core"), timeout=120)


@pytest.mark.parametrize("method", METHODS)
def test_compressed_sum_on_ranks_equals_the_single_process_reference(exchanged, method):
    expected, _ = reference(method)
    for r in range(RANKS):
        summed, _, _ = exchanged.values[r][method]
        tol = 1e-2 if method in ("fp16", "bf16") else 1e-5      # half-precision payloads are summed in half
        torch.testing.assert_close(summed, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("method", METHODS)
def test_the_network_carries_exactly_the_payload_bytes(exchanged, method):
    _, sizes = reference(method)
    p = RANKS
    for r in range(RANKS):
        _, wire, payload = exchanged.values[r][method]
        assert payload == sizes[r]                             # what the compressor claims is what it made
        sync = compress.make(method, **OPTS)
        if sync.compressor.summable:                           # ring all-reduce: 2(p-1) chunks of ~payload/p
            extra = (p - 1) * 4 if method == "int8" else 0     # the scale agreement: one fp32 per rank
            assert abs(wire - extra - 2 * (p - 1) / p * payload) <= 2 * (p - 1) * 4
        elif sync.compressor.fixed_size:                       # ring all-gather: everyone's payload but the next rank's
            assert wire == (p - 1) * payload
        else:                                                  # sizes first (2 int32 parts), then a ring all-gatherv
            assert wire == (p - 1) * 2 * 4 + sum(sizes) - sizes[(r + 1) % p]
    if method == "threshold":
        assert sizes[2] == 0                                   # an empty payload travelled without a hang


def int8_overflow(comm):
    raw = torch.tensor([100], dtype=torch.int8)
    dist.all_reduce(raw, group=comm.group)                    # what a naive int8 all-reduce does
    sync = compress.make("int8", world_size=comm.world_size)
    ours = sync.sync(comm, torch.tensor([1.0, -1.0, 0.25]), 0)  # every rank at +max: the worst case
    return int(raw), ours


def test_int8_sums_never_overflow_where_a_raw_int8_all_reduce_wraps():
    res = netlab.run(int8_overflow, ranks=RANKS, network=NET, timeout=60)
    for raw, ours in res.values:
        assert raw == 4 * 100 - 512                            # -112: torch's int8 all-reduce wrapped silently
        torch.testing.assert_close(ours, torch.tensor([4.0, -4.0, 4 * 0.25]), atol=4 / 31 / 2 * 4, rtol=0)
        assert float(ours[0]) == pytest.approx(4.0)            # the largest value survives exactly: 4 x 31 levels


# ---- PowerSGD against plain torch in one process: no netlab collective, no netlab PowerSGD code ----
SHAPES = [(12, 8), (12,), (5, 12)]        # two matrices (distinct shapes; (5, 12) too small to squash at r = 2), a bias
STEPS = 3


def psgd_gradient(rank, step):
    """Rank `rank`'s share at `step`: fresh values each step, so warm start and EF really matter."""
    n = sum(int(torch.tensor(s).prod()) for s in SHAPES)
    return torch.randn(n, generator=torch.Generator().manual_seed(1000 * step + rank))


def powersgd_on_ranks(comm, rank, error_feedback, warm_start):
    ps = compress.PowerSGD(SHAPES, rank=rank, error_feedback=error_feedback, warm_start=warm_start, seed=7)
    return [ps.sync(comm, psgd_gradient(comm.rank, step), step) for step in range(STEPS)]


def powersgd_reference(rank, error_feedback, warm_start, p=RANKS):
    """The summed low-rank gradient per step, in float64: torch sums and torch.linalg.qr.

    P's orthonormal basis is unique up to column signs and out = P P^T M does not see them, so QR
    here and Gram-Schmidt in netlab must agree. The first Q (and every Q without warm start) is
    drawn as torch's powerSGD_hook draws it: standard normal, seeded from RandomState(seed).
    """
    sizes = [int(torch.tensor(s).prod()) for s in SHAPES]
    # the hook's rule (min_compression_rate 2): squash a matrix only if 2 (n + m) r < n m
    squashed = [i for i, s in enumerate(SHAPES) if len(s) == 2 and 2 * (s[0] + s[1]) * min(*s, rank) < s[0] * s[1]]
    rng, qs, errors, outs = np.random.RandomState(7), None, [0.0] * p, []
    for step in range(STEPS):
        xs = [psgd_gradient(r, step).double() + errors[r] for r in range(p)]
        parts = [list(torch.split(x, sizes)) for x in xs]
        if qs is None or not warm_start:
            gen = torch.Generator().manual_seed(int(rng.randint(1_000_000_000)))
            qs = {i: torch.randn(1, SHAPES[i][1], min(SHAPES[i][0], SHAPES[i][1], rank), generator=gen)[0].double()
                  for i in squashed}
        out = []
        for i, shape in enumerate(SHAPES):
            if i not in squashed:                                      # bias, small matrix: a plain sum
                out.append(sum(part[i] for part in parts))
                continue
            mats = [part[i].view(shape) for part in parts]
            basis = torch.linalg.qr(sum(m @ qs[i] for m in mats)).Q     # orthonormal basis of the summed P
            qs[i] = sum(m.T @ basis for m in mats)                     # the summed Q
            out.append((basis @ qs[i].T).reshape(-1))
        out = torch.cat(out)
        if error_feedback:
            errors = [x - out / p for x in xs]
        outs.append(out)
    return outs


@pytest.mark.parametrize("rank, error_feedback, warm_start", [(1, True, True), (2, True, True), (1, False, False)])
def test_powersgd_on_ranks_equals_plain_torch_in_one_process(rank, error_feedback, warm_start):
    res = netlab.run(powersgd_on_ranks, rank=rank, error_feedback=error_feedback, warm_start=warm_start,
                     ranks=RANKS, network=NET, timeout=120)
    expected = powersgd_reference(rank, error_feedback, warm_start)
    dense = [sum(psgd_gradient(r, step) for r in range(RANKS)) for step in range(STEPS)]
    for outs in res.values:
        for step, (ours, want) in enumerate(zip(outs, expected)):
            torch.testing.assert_close(ours.double(), want, rtol=1e-4, atol=1e-4)
            assert (want - dense[step]).abs().max() > 0.1              # really low-rank: not the dense sum
