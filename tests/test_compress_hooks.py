"""netlab's PowerSGD and fp16 against PyTorch's own DDP communication hooks, on real gloo ranks.

Both run in the same ranks on the same data: DDP with the hook on ``comm.group`` (torch's
collectives), netlab's compressor through ``comm`` (netlab's ring over the emulated network). Each
rank gives netlab its local mean gradient divided by p (netlab sums shares; the hooks average), so
the two must return the same averaged gradient, step after step.
"""
import copy

import pytest
import torch
import torch.nn.functional as F

import netlab
from netlab import compress, data
from netlab.dataparallel import train

RANKS = 4                       # a power of two: dividing by p is exact, so fp16 rounds alike


def _ddp(comm, model, hook, state):
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(copy.deepcopy(model), process_group=comm.group)
    order = []

    def recording_hook(state, bucket):          # the bucket's tensor order decides PowerSGD's Q draws
        order[:] = [id(p) for p in bucket.parameters()]
        return hook(state, bucket)
    ddp.register_comm_hook(state, recording_hook)
    return ddp, order


def powersgd_against_hook(comm, rank, steps, start, error_feedback, warm_start, width=48):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    p = comm.world_size
    model = train.make_model(width, 2, seed=0)
    # torch's default start_powerSGD_iter is 1_000: a short run would never compress. Set it.
    state = ps.PowerSGDState(process_group=comm.group, matrix_approximation_rank=rank, start_powerSGD_iter=start,
                             use_error_feedback=error_feedback, warm_start=warm_start, random_seed=0)
    ddp, order = _ddp(comm, model, ps.powerSGD_hook, state)
    params = list(ddp.module.parameters())
    index = {id(q): i for i, q in enumerate(params)}
    x, y = data.load("train")
    mine = wrong = None
    worst, wrong_gap = 0.0, 0.0
    for step in range(steps):
        idx = train.batch_indices(step, comm.rank, p, 16, n=len(y))
        ddp.zero_grad()
        F.cross_entropy(ddp(x[idx]), y[idx]).backward()           # the hook runs inside backward
        twin = copy.deepcopy(ddp.module)                             # same weights, plain autograd
        twin.zero_grad(set_to_none=True)
        F.cross_entropy(twin(x[idx]), y[idx]).backward()
        if step < start:
            continue                                                 # both plain all-reduce until then
        perm = [index[i] for i in order]                             # bucket order of the parameters
        tw = list(twin.parameters())
        share = torch.cat([tw[j].grad.reshape(-1) for j in perm]) / p
        if mine is None:                                             # PowerSGD starts here on both sides
            shapes = [tuple(params[j].shape) for j in perm]
            mine = compress.PowerSGD(shapes, rank=rank, error_feedback=error_feedback, warm_start=warm_start)
            wrong = compress.PowerSGD(shapes, rank=rank, error_feedback=not error_feedback, warm_start=warm_start)
        ours = mine.sync(comm, share, step)
        other = wrong.sync(comm, share, step)
        theirs = torch.cat([params[j].grad.reshape(-1) for j in perm])
        worst = max(worst, float((ours - theirs).abs().max() / theirs.abs().max()))
        wrong_gap = max(wrong_gap, float((other - theirs).abs().max() / theirs.abs().max()))
        with torch.no_grad():
            for q in params:
                q -= 0.1 * q.grad
    return {"worst": worst, "wrong_gap": wrong_gap, "payload": mine.payload_bytes, "numel": mine.numel,
            "iter": state.iter}


@pytest.mark.parametrize("rank, error_feedback, warm_start", [(1, True, True), (2, True, True), (1, False, False)])
def test_powersgd_matches_torch_powerSGD_hook(rank, error_feedback, warm_start):
    res = netlab.run(powersgd_against_hook, ranks=RANKS, network=netlab.network("10Gbit/s", "5us"),
                     device=netlab.device("cpu-core"), rank=rank, steps=7, start=2,
                     error_feedback=error_feedback, warm_start=warm_start, timeout=120)
    for v in res.values:
        assert v["iter"] == 7                                        # the hook really ran 7 iterations
        assert v["worst"] < 1e-4, v                                  # same low-rank gradient, every step
        assert v["payload"] * 4 < 4 * v["numel"]                     # and it really was compressed
    if error_feedback:                                               # the comparison can tell EF on from off
        assert max(v["wrong_gap"] for v in res.values) > 1e-2


def fp16_against_hook(comm, steps=3):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    p = comm.world_size
    model = train.make_model(64, 2, seed=0)
    ddp, _ = _ddp(comm, model, default_hooks.fp16_compress_hook, comm.group)
    x, y = data.load("train")
    sync = compress.make("fp16")
    out = []
    for step in range(steps):
        idx = train.batch_indices(step, comm.rank, p, 16, n=len(y))
        ddp.zero_grad()
        F.cross_entropy(ddp(x[idx]), y[idx]).backward()
        twin = copy.deepcopy(ddp.module)
        twin.zero_grad(set_to_none=True)
        F.cross_entropy(twin(x[idx]), y[idx]).backward()
        ours = sync.sync(comm, train.flat_grad(twin) / p, step)
        exact = train.flat_grad(twin) / p
        magnitude = exact.abs()
        torch.distributed.all_reduce(exact, group=comm.group)       # the fp32 mean, for contrast
        torch.distributed.all_reduce(magnitude, group=comm.group)   # sum of |shares|: bounds partial sums
        out.append((ours, train.flat_grad(ddp.module), exact, magnitude))
        with torch.no_grad():
            for q in ddp.module.parameters():
                q -= 0.1 * q.grad
    return out


def test_fp16_matches_torch_fp16_compress_hook():
    res = netlab.run(fp16_against_hook, ranks=RANKS, network=netlab.network("10Gbit/s", "5us"),
                     device=netlab.device("cpu-core"), timeout=120)
    for steps in res.values:
        for ours, theirs, exact, magnitude in steps:
            # both round each share to fp16 and add in fp16, gloo and netlab's ring in different orders:
            # each of the p roundings and p - 1 additions is off by at most half an ulp of a partial sum
            half_ulp = torch.maximum(magnitude * 2.0 ** -11, torch.tensor(2.0 ** -25))
            assert ((ours - theirs).abs() <= 2 * (2 * RANKS - 1) * half_ulp).all()
            assert ((ours - exact).abs() <= (2 * RANKS - 1) * half_ulp).all()
            assert (ours != exact).sum() > exact.numel() // 2             # really rounded to fp16, like the hook
