"""Properties of every compressor, single process (Hypothesis): unbiasedness, error-feedback mass
conservation, each method's reconstruction bound, bit packing, and honest payload sizes."""
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from claims import claim
from netlab import compress
from netlab.runtime.comm import Comm
from netlab.compress import (QSGD, Cast, Compression, DGCMemory, DGCTopK, Int8, PowerSGD, RandomK, ScaledSign,
                             TernGrad, Threshold, TopK)
from netlab.compress.base import pack_bits, unpack_bits

LOCAL = Comm(0, 1)          # one rank: collectives are no-ops, compute runs on the wall clock

vectors = arrays(np.float32, st.integers(2, 48),
                 elements=st.floats(-4, 4, allow_nan=False, allow_subnormal=False, width=32)).map(torch.from_numpy)
fast = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def roundtrip(compressor, x, step=0):
    return compressor.decompress(compressor.compress(x, step))


def looks_unbiased(compressor, x, spread, draws=4000):
    """Mean of `draws` decompressions within 5 spread/sqrt(draws) of x, element by element.

    `spread` (d,) bounds the range of each element's outcomes, so by Hoeffding an unbiased
    compressor fails this with probability below 2 exp(-50) per element.
    """
    if isinstance(compressor, (QSGD, TernGrad)):      # element-wise draws: one call on `draws` copies of x
        width = getattr(compressor, "bucket", x.numel())   # a QSGD bucket holds exactly one (padded) copy
        tiled = torch.cat([x, x.new_zeros(width - x.numel())]).repeat(draws)
        samples = roundtrip(compressor, tiled).view(draws, width)[:, :x.numel()]
    else:                                             # random-k draws its indices per step
        samples = torch.stack([roundtrip(compressor, x, step) for step in range(draws)])  # (draws, d)
    error = (samples.double().mean(0) - x.double()).abs()
    return bool((error <= 5 * spread.double() / math.sqrt(draws) + 1e-6 * x.abs().double() + 1e-9).all())


# ---- unbiased compressors are unbiased (and the check can tell a biased one) -----------------------------
few = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@few
@given(vectors)
def test_qsgd_is_unbiased(x):
    spread = torch.full_like(x, float(x.norm()) / 2)                   # two adjacent levels: norm / s apart
    assert looks_unbiased(QSGD(levels=2, bucket=48, seed=1), x, spread)


@few
@given(vectors)
def test_terngrad_without_clipping_is_unbiased(x):
    spread = torch.full_like(x, float(x.abs().max()))                  # 0 or sign * max|x|
    assert looks_unbiased(TernGrad(clip=None, seed=2), x, spread)


@pytest.mark.slow
@few
@given(vectors)
def test_rescaled_random_k_is_unbiased(x):
    assert looks_unbiased(RandomK(ratio=0.25, rescale=True, seed=3), x, x.abs() * x.numel() / 4 + 1e-6, draws=1000)


def test_the_unbiasedness_check_catches_biased_compressors():
    x = torch.tensor([3.0, 1.0, -1.0, 0.5])
    spread = x.abs().max().expand(4)
    assert not looks_unbiased(TopK(0.25), x, spread)                     # always drops the small ones
    assert not looks_unbiased(RandomK(0.25, rescale=False), x, spread)   # unscaled: E = x k/d
    assert not looks_unbiased(TernGrad(clip=0.5, seed=0), x, spread)     # clipping biases TernGrad
    assert looks_unbiased(RandomK(0.25, rescale=True), x, x.abs() * 4)


# ---- error feedback conserves mass: sent + residual == gradient + previous residual ----------------------
@claim("ch4.ef-conserves-mass")
@fast
@given(st.sampled_from(["none", "fp16", "bf16", "int8", "qsgd", "terngrad", "sign", "majority", "topk",
                        "randomk", "threshold"]),
       st.integers(0, 2**31 - 1))
def test_error_feedback_conserves_mass(method, seed):
    gen = torch.Generator().manual_seed(seed)
    pipe = Compression.of(compress.make_compressor(method, ratio=0.1, tau=0.5, seed=seed), error_feedback=True)
    previous = torch.zeros(64)
    for step in range(4):
        g = torch.randn(64, generator=gen)
        payload = pipe.encode(LOCAL, g, step)
        sent = pipe.compressor.decompress(payload)
        torch.testing.assert_close(sent + pipe.memory.residual(), g + previous, rtol=1e-6, atol=1e-6)
        previous = pipe.memory.residual().clone()


@fast
@given(st.integers(0, 2**31 - 1), st.floats(0.0, 0.95))
def test_dgc_memory_conserves_mass_with_momentum_correction(seed, momentum):
    gen = torch.Generator().manual_seed(seed)
    mem, comp = DGCMemory(momentum=momentum, clip_norm=None), DGCTopK(0.1, warmup_steps=8)
    u_prev, v_prev = torch.zeros(50), torch.zeros(50)
    for step in range(6):
        g = torch.randn(50, generator=gen)
        v = mem.compensate(g, step)
        payload = comp.compress(v, step)
        sent = comp.decompress(payload)
        mem.update(v, sent, step, payload)
        u_t = momentum * u_prev + g                                       # momentum correction
        torch.testing.assert_close(sent + mem.v, v_prev + u_t)            # nothing lost, only delayed
        idx = payload.tensors[0].long()
        assert (mem.u[idx] == 0).all() and (mem.v[idx] == 0).all()       # momentum factor masking
        u_prev, v_prev = mem.u.clone(), mem.v.clone()


def test_dgc_warm_up_density_and_local_clipping():
    from netlab.compress.dgc import density
    assert [density(s, 0.01, 40) for s in (0, 10, 20, 30, 40)] == [0.25, 0.0625, 0.015625, 0.01, 0.01]
    assert comp_k(DGCTopK(0.001, warmup_steps=40), 0) == 0.25 * 1000 and comp_k(DGCTopK(0.001, 40), 39) == 4
    mem = DGCMemory(momentum=0.0, clip_norm=2.0, world_size=4)            # this rank's share: 2 / sqrt(4)
    v = mem.compensate(torch.full((100,), 1.0))
    assert float(v.norm()) == pytest.approx(1.0)


def comp_k(comp, step):
    return comp.compress(torch.randn(1000), step).tensors[0].numel()


@fast
@given(st.integers(0, 2**31 - 1), st.booleans())
def test_powersgd_error_feedback_conserves_mass(seed, warm_start):
    gen = torch.Generator().manual_seed(seed)
    ps = PowerSGD([(12, 8), (12,), (5, 12)], rank=1, error_feedback=True, warm_start=warm_start, seed=seed)
    previous = torch.zeros(ps.numel)
    for step in range(3):
        g = torch.randn(ps.numel, generator=gen)
        out = ps.sync(LOCAL, g, step)
        torch.testing.assert_close(out + ps.residual(), g + previous, rtol=1e-5, atol=1e-5)
        previous = ps.residual().clone()


# ---- decompress(compress(x)) within each method's bound -------------------------------------------------
@fast
@given(vectors)
def test_cast_rounding_bounds(x):
    for dtype, rel in ((torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)):
        err = (roundtrip(Cast(dtype), x) - x).abs()
        assert (err <= rel * x.abs() + 2.0 ** -25).all()


@fast
@given(vectors)
def test_int8_error_is_at_most_half_a_step(x):
    payload = Int8().compress(x)
    step = payload.meta["scale"]
    assert payload.tensors[0].dtype == torch.int8 and step == pytest.approx(float(x.abs().max()) / 127 or 1.0)
    assert ((Int8().decompress(payload) - x).abs() <= step / 2 * (1 + 1e-5)).all()


@fast
@given(vectors, st.integers(1, 127), st.integers(1, 20))
def test_qsgd_error_is_below_one_level(x, levels, bucket):
    comp = QSGD(levels=levels, bucket=bucket, seed=0)
    pad = torch.cat([x, x.new_zeros((-x.numel()) % bucket)]).view(-1, bucket)
    level = (pad.norm(dim=1, keepdim=True) / levels).expand_as(pad).reshape(-1)[:x.numel()]
    assert ((roundtrip(comp, x) - x).abs() <= level * (1 + 1e-5) + 1e-7).all()


@fast
@given(vectors)
def test_terngrad_error_is_below_the_scale(x):
    assert ((roundtrip(TernGrad(clip=None), x) - x).abs() <= x.abs().max() * (1 + 1e-6)).all()


@fast
@given(vectors)
def test_scaled_sign_error_has_its_closed_form(x):
    d = x.numel()
    err = float(((roundtrip(ScaledSign(), x).double() - x.double()) ** 2).sum())
    x = x.double()
    closed = float((x ** 2).sum()) - float(x.abs().sum()) ** 2 / d      # ||x||^2 - ||x||_1^2 / d
    assert err == pytest.approx(closed, rel=1e-4, abs=1e-6 * float((x ** 2).sum()) + 1e-9)


@fast
@given(vectors, st.floats(0.05, 1.0))
def test_top_k_is_contractive_and_keeps_the_largest_exactly(x, ratio):
    out = roundtrip(TopK(ratio), x)
    k = compress.sparsify.k_of(ratio, x.numel())
    kept = out != 0
    assert torch.equal(out[kept], x[kept])
    assert float(((x - out) ** 2).sum()) <= (1 - k / x.numel()) * float((x ** 2).sum()) * (1 + 1e-5) + 1e-9
    if (~kept).any() and kept.any():
        assert float(x[~kept].abs().max()) <= float(x[kept].abs().min())


@fast
@given(vectors, st.floats(0.05, 2.0))
def test_threshold_drops_only_what_is_below_tau(x, tau):
    out = roundtrip(Threshold(tau), x)
    assert ((out - x).abs() < tau).all()
    assert torch.equal(out[x.abs() >= tau], x[x.abs() >= tau])


@fast
@given(st.integers(2, 12), st.integers(2, 12), st.integers(0, 10_000))
def test_powersgd_full_rank_is_exact_and_rank_one_never_grows_the_error(n, m, seed):
    M = torch.randn(n, m, generator=torch.Generator().manual_seed(seed))
    full = PowerSGD([(n, m)], rank=min(n, m), error_feedback=False, min_compression_rate=0)
    torch.testing.assert_close(full.sync(LOCAL, M.reshape(-1), 0).view(n, m), M, rtol=1e-4, atol=1e-4)
    low = PowerSGD([(n, m)], rank=1, error_feedback=False, min_compression_rate=0)
    assert float((low.sync(LOCAL, M.reshape(-1), 0).view(n, m) - M).norm()) <= float(M.norm()) * (1 + 1e-5)


# ---- bytes on the wire: packed for real, indices and scales counted -------------------------------------
@fast
@given(st.sampled_from([1, 2, 4, 8]), st.integers(0, 100), st.integers(0, 2**31 - 1))
def test_pack_bits_round_trips_and_is_as_small_as_claimed(bits, n, seed):
    codes = torch.randint(0, 2 ** bits, (n,), generator=torch.Generator().manual_seed(seed))
    packed = pack_bits(codes, bits)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(n * bits / 8)
    assert torch.equal(unpack_bits(packed, bits, n), codes.to(torch.uint8))


def test_payload_bytes_count_indices_and_scales():
    d = 10_000
    x = torch.randn(d)
    assert compress.make_compressor("none").compress(x).nbytes == 4 * d
    assert Cast(torch.float16).compress(x).nbytes == 2 * d
    assert Int8().compress(x).nbytes == d
    assert TopK(0.01).compress(x).nbytes == d // 100 * (4 + 4)            # int32 index + fp32 value
    assert RandomK(0.01).compress(x).nbytes == d // 100 * 4               # shared indices: not sent
    assert ScaledSign().compress(x).nbytes == d // 8 + 4                  # bits + one fp32 scale
    assert TernGrad().compress(x).nbytes == d // 4 + 4                    # 2-bit codes + scale
    assert QSGD(levels=7, bucket=128).compress(x).nbytes == d // 2 + 4 * math.ceil(d / 128)
    assert QSGD(levels=1).bits == 2 and QSGD(levels=4).bits == 4 and QSGD(levels=127).bits == 8
    assert Threshold(1.0).compress(x).nbytes == 8 * int((x.abs() >= 1.0).sum())
    ps = PowerSGD([(128, 64), (128,), (10, 128)], rank=1)
    assert ps.payload_bytes == 4 * ((128 + 64) + 128 + (10 + 128))        # P and Q, bias uncompressed


def test_bad_settings_name_the_parameter():
    for make, match in [(lambda: TopK(0), "^ratio:"), (lambda: TopK(1.5), "^ratio:"), (lambda: QSGD(0), "^levels:"),
                        (lambda: Threshold(-1), "^tau:"), (lambda: compress.make("zip"), "^method:"),
                        (lambda: compress.make("powersgd"), "^shapes:"), (lambda: PowerSGD([(4, 4)], rank=0), "^rank:"),
                        (lambda: Int8(levels=100).levels_for(4), "^levels:"), (lambda: compress.levels_for_bits(3), "^bits:"),
                        (lambda: compress.SyncConfig(world_size=2, comm_rank=2), "^comm_rank:"),
                        (lambda: compress.SyncConfig(world_size=0), "^world_size:"),
                        (lambda: compress.SyncConfig(seed=-1), "^seed:"),
                        (lambda: compress.make(compress.SyncConfig(), ratio=0.1), "^config:")]:
        with pytest.raises(ValueError, match=match):
            make()


def test_make_builds_the_same_pipeline_from_a_config_or_its_fields():
    x = torch.randn(1000)
    keep = torch.topk(x.abs(), 100).indices.sort().values                # brute force: the 100 largest |x|
    for sync in (compress.make(compress.SyncConfig(method="topk", ratio=0.1, error_feedback=True)),
                 compress.make("topk", ratio=0.1, error_feedback=True)):
        assert sync.error_feedback and torch.equal(sync.compressor.compress(x).tensors[0].long().sort().values, keep)
    with pytest.raises(TypeError):
        compress.SyncConfig("topk")                                        # keyword-only


def test_a_bare_compressor_and_make_share_each_knobs_default():
    d = 10_000
    x = torch.randn(d)
    # 1 % of the elements; every |g| >= 0.01; QSGD in 4 bits: 2s + 1 <= 16 levels, s = 7; PowerSGD rank 1
    assert TopK().compress(x).nbytes == compress.make("topk").compressor.compress(x).nbytes == d // 100 * 8
    assert RandomK().compress(x).nbytes == d // 100 * 4
    assert Threshold().compress(x).nbytes == 8 * int((x.abs() >= 0.01).sum())
    assert QSGD().levels == compress.make("qsgd").compressor.levels == 7 and QSGD().bits == 4
    assert PowerSGD([(128, 64)]).payload_bytes == 4 * (128 + 64)
