"""Bucketed overlap of the all-reduce with the backward pass: DDP's buckets, and times on real ranks.

References: torch's own bucket assignment (the C++ function DDP calls, and a real DDP's rebuilt
buckets), the closed-form alpha-beta pipeline, and the plain (non-overlapped) step of train.step.
"""
import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from netlab.dataparallel import buckets as bk
import netlab
from netlab.collectives import cost
from netlab.dataparallel import overlap, train
from netlab.net.network import network
from netlab.net.presets import device

MIB = 1 << 20


def resnet18_shapes():
    """torchvision's resnet18 parameters, in parameters() order (11,689,512 of them)."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            down = stage > 0 and block == 0
            shapes += [(cout, cin, 3, 3), (cout,), (cout,), (cout, cout, 3, 3), (cout,), (cout,)]
            if down:
                shapes += [(cout, cin, 1, 1), (cout,), (cout,)]
            cin = cout
    return shapes + [(1000, 512), (1000,)]


def torch_buckets(tensors, limits, indices):
    return [list(b) for b in dist._compute_bucket_assignment_by_size(tensors, limits, [], indices)[0]]


def test_resnet18_shapes_match_the_published_count():
    assert sum(torch.Size(s).numel() for s in resnet18_shapes()) == 11_689_512


@pytest.mark.parametrize("cap_mb", [None, 25, 5, 1, 0.25])
def test_buckets_equal_torch_for_resnet18_in_reversed_order(cap_mb):
    params = [torch.empty(s) for s in resnet18_shapes()]
    first, cap = bk.ddp_caps(cap_mb)
    order = list(reversed(range(len(params))))           # DDP's guess of the ready order before step 1
    ours = bk.assign_buckets([params[i].numel() * 4 for i in order], cap, first, order)
    assert ours == torch_buckets([params[i] for i in order], [first, cap], order)


@pytest.mark.parametrize("cap", [1, 5_000, 300_000, MIB, 25 * MIB])
def test_buckets_equal_torch_for_the_lab_model_in_ready_order(cap):
    prof = bk.backward_profile(256, 4, 8)
    params = list(train.make_model(256, 4).parameters())
    for first in (None, MIB):
        ours = bk.plan(prof, cap, first)
        limits = [cap] if first is None else [first, cap]
        assert ours == torch_buckets([params[i] for i in prof.order], limits, list(prof.order))


def test_ddp_caps_follow_torch():
    cfg = torch.nn.parallel.distributed._BucketCapacityConfig
    for cap_mb in (None, 25, 3):
        c = cfg.create(cap_mb, None, False)
        assert bk.ddp_caps(cap_mb) == (c.first_bucket_bytes_cap, c.bucket_bytes_cap)
    assert bk.DEFAULT_FIRST_BUCKET_BYTES == dist._DEFAULT_FIRST_BUCKET_BYTES


def test_plan_equals_a_real_ddp_run():
    """A real DDP (one gloo rank) reports iteration 0's single bucket and the buckets it rebuilds."""
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        for cap_mb in (None, 0.5):
            model = train.make_model(512, 4)
            ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap_mb)
            for _ in range(3):
                F.cross_entropy(ddp(torch.zeros(8, 64)), torch.zeros(8, dtype=torch.long)).backward()
            logged = ddp._get_ddp_logging_data()
            prof = bk.backward_profile(512, 4, 8)
            first, cap = bk.ddp_caps(cap_mb)
            assert [sum(prof.nbytes)] == [int(s) for s in str(logged["bucket_sizes"]).split(",")]
            assert len(bk.plan(prof, cap, first, iteration=0)) == 1
            ours = bk.plan(prof, cap, first)
            theirs = [[int(i) for i in b.split()] for b in logged["rebuilt_per_bucket_param_indices"].split(",")]
            assert ours == theirs
            assert [sum(prof.nbytes[prof.order.index(i)] for i in b) for b in ours] == \
                [int(s) for s in logged["rebuilt_bucket_sizes"].split(",")]
    finally:
        dist.destroy_process_group()


def test_profile_counts_the_same_flops_as_the_step():
    prof = bk.backward_profile(256, 3, 16)
    assert prof.total_flops == train.step_flops(256, 3, 16)
    assert list(prof.ready_flops) == sorted(prof.ready_flops) and prof.ready_flops[-1] <= prof.total_flops
    assert 0 < prof.forward_flops < prof.ready_flops[0]


def test_bad_bucket():
    for bad in (0, -1, 0.5, "1M", True):
        with pytest.raises(ValueError, match="bucket"):
            bk.assign_buckets([4, 4], bad)


NET = network("10Gbit/s", "5us")
DEV = device("cpu-core")
SHAPE = dict(width=256, layers=4, batch=16)


def _run(ranks=4, net=NET, **kw):
    return netlab.run(overlap.overlapped_step, ranks=ranks, network=net, device=DEV, **{**SHAPE, **kw})


@pytest.mark.slow                       # large buckets on ranks
def test_one_bucket_is_compute_then_allreduce_exactly():
    res = _run(bucket_bytes=10**12, return_grad=True)
    plain = netlab.run(train.step, ranks=4, network=NET, device=DEV, return_grad=True, **SHAPE)
    assert res.trace.makespan == pytest.approx(plain.trace.makespan, rel=1e-12)
    grad_bytes = train.grad_bytes(SHAPE["width"], SHAPE["layers"])
    for v in res.values:
        assert len(v["buckets"]) == 1
        # the ring's chunks are whole elements, so the closed form (n/p bytes each) differs by a few bytes
        assert v["exposed_comm_s"] == pytest.approx(cost.ring_allreduce(4, grad_bytes, NET.nic), rel=1e-5)
    torch.testing.assert_close(res.values[0]["grad"], plain.values[0]["grad"])


@pytest.mark.parametrize("cap", [20_000, 100_000])
def test_many_buckets_follow_the_alpha_beta_pipeline(cap):
    res = _run(bucket_bytes=cap)
    prof = bk.backward_profile(SHAPE["width"], SHAPE["layers"], SHAPE["batch"])
    plan = bk.plan(prof, cap)
    assert len(plan) > 2
    size = dict(zip(prof.order, prof.nbytes))
    nbytes = [sum(size[i] for i in b) for b in plan]
    ready = [DEV.seconds(f) for f in bk.bucket_ready_flops(prof, plan)]
    optimizer = DEV.seconds(2 * train.parameter_count(SHAPE["width"], SHAPE["layers"]))
    want = overlap.pipeline_time(nbytes, ready, DEV.seconds(prof.total_flops), 4, link=NET.nic, optimizer_s=optimizer)
    assert res.trace.makespan == pytest.approx(want["total_s"], rel=0.01)
    assert res.values[0]["exposed_comm_s"] == pytest.approx(want["exposed_comm_s"], rel=0.01)
    # overlap hides communication: the same buckets sent after the backward pass take longer
    late = _run(bucket_bytes=cap, overlap=False)
    assert late.trace.makespan > res.trace.makespan


def test_bucket_size_curve_is_u_shaped():
    """Compute about equal to communication, alpha 50 us: per-tensor buckets pay alpha ten times,
    one bucket hides nothing; two buckets of about 300 KB beat both."""
    slow = network("10Gbit/s", "50us")
    times = {cap: _run(net=slow, bucket_bytes=cap, batch=256).trace.makespan for cap in (1, 300_000, 10**12)}
    assert times[300_000] < times[1] and times[300_000] < times[10**12]


@pytest.mark.parametrize("settings, name", [
    (dict(ranks=0), "ranks"), (dict(width=3), "width"), (dict(batch=0), "batch"), (dict(algo="spiral"), "algo"),
    (dict(bucket=0, overlap=True), "bucket"), (dict(bandwidth="10furlongs"), "bandwidth"),
])
def test_a_bad_step_setting_is_one_value_error_naming_it_before_any_rank_starts(settings, name, monkeypatch):
    from netlab.dataparallel.step import StepConfig, measure_step
    from netlab.runtime import shared

    def tripwire(*args, **kw):
        raise AssertionError("a rank pool was started")
    monkeypatch.setattr(shared, "run_on_pool", tripwire)
    with pytest.raises(ValueError, match=f"^{name}:"):
        measure_step(**settings)
    if name in ("ranks", "width", "batch", "algo"):          # checked by the config itself
        with pytest.raises(ValueError, match=f"^{name}:"):
            StepConfig(**settings)


@pytest.mark.parametrize("settings, name", [(dict(bucket_bytes=0), "bucket_bytes"), (dict(lr=0), "lr"),
                                            (dict(first_bucket_bytes=-1), "first_bucket_bytes"),
                                            (dict(iteration=-1), "iteration"), (dict(width=3), "width")])
def test_a_bad_bucketed_step_config_names_the_field(settings, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        overlap.OverlapConfig(**settings)


def test_a_step_config_and_its_keywords_give_the_same_step():
    from netlab.dataparallel.step import StepConfig, measure_step
    settings = dict(ranks=2, width=64, batch=8, bandwidth="1Gbit/s")
    assert measure_step(StepConfig(**settings)).total_s == measure_step(**settings).total_s
    with pytest.raises(ValueError, match="^config:"):
        measure_step(StepConfig(**settings), ranks=2)
