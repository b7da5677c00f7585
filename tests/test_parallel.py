"""Tensor and pipeline parallelism on real ranks, against torch on one process and the closed forms.

References, each independent of netlab.codesign.parallel: the gradients of ``train.make_model`` computed by
torch's autograd on the whole global batch in this process; FLOPs counted by torch's
``FlopCounterMode`` on the model's own layers; the ring all-reduce's alpha-beta cost
(``cost.ring_allreduce``, itself checked against runs in test_cost.py); and the byte counts written
out here from what each scheme must send.
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import netlab
from netlab.collectives import cost
from netlab.dataparallel import train
from netlab.net.network import network
from netlab.net.presets import device
from netlab.codesign.parallel import experiment, measure, pipeline, tensor
from netlab.codesign.parallel.mlp import global_batch
from netlab.runtime import shared

NET = network("10Gbit/s", "50us")
DEV = device("cpu-core")


def torch_reference(width, layers, batch):
    """Loss and per-layer (dW, db) of the whole model on the whole global batch, by autograd."""
    model = train.make_model(width, layers)
    x, y = global_batch(batch)
    loss = F.cross_entropy(model(x), y, reduction="sum") / batch
    loss.backward()
    linears = [m for m in model if isinstance(m, nn.Linear)]
    return loss.item(), [(m.weight.grad, m.bias.grad) for m in linears], linears


def flops(fn):
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("ranks", [2, 4])
def test_tensor_parallel_gradients_equal_one_process(ranks):
    width, layers, batch = 64, 4, 64
    loss, ref, _ = torch_reference(width, layers, batch)
    res = netlab.run(tensor.tp_step, ranks=ranks, network=NET, device=DEV, width=width, layers=layers, batch=batch,
                      return_grads=True)
    for v in res.values:
        assert v["loss"] == pytest.approx(loss, rel=1e-5)
    g = [v["grads"] for v in res.values]
    # layers 0 and 2 split by columns (output rows of W), 1 and 3 by rows (input columns of W), 4 whole
    for i in (0, 2):
        torch.testing.assert_close(torch.cat([gr[i][0] for gr in g], 0), ref[i][0], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(torch.cat([gr[i][1] for gr in g], 0), ref[i][1], rtol=1e-4, atol=1e-6)
    for i in (1, 3):
        torch.testing.assert_close(torch.cat([gr[i][0] for gr in g], 1), ref[i][0], rtol=1e-4, atol=1e-6)
    for i in (1, 3, 4):
        for gr in g:
            torch.testing.assert_close(gr[i][1], ref[i][1], rtol=1e-4, atol=1e-6)
    for gr in g:
        torch.testing.assert_close(gr[4][0], ref[4][0], rtol=1e-4, atol=1e-6)


def test_tensor_parallel_bytes_and_time_are_the_closed_form():
    p, width, layers, batch = 4, 128, 4, 128
    r = measure("tp", ranks=p, width=width, layers=layers, batch=batch)
    # layers (0,1) and (2,3) are pairs: each all-reduces its batch x width output forward; the second
    # pair also its batch x width input gradient backward (the first pair's input is the data)
    sizes = [4 * batch * width] * 3
    assert r.bytes_per_step == sum(2 * (p - 1) * s for s in sizes)
    model = train.make_model(width, layers)
    lone = model[-1]                                     # width -> 10, computed whole on every rank
    x = torch.zeros(batch, width, requires_grad=True)
    lone_flops = flops(lambda: lone(x).sum().backward())
    split = train.step_flops(width, layers, batch) - lone_flops
    params = ((64 * width + 3 * width * width) // p     # split weights
              + 2 * width // p + 2 * width                # the column layers' split biases, the row layers' whole ones
              + (width + 1) * 10)                         # the lone layer
    compute = DEV.seconds(split / p + lone_flops + 2 * params)
    comm = sum(cost.ring_allreduce(p, s, NET.nic) for s in sizes)
    assert r.step_s == pytest.approx(compute + comm, rel=0.01)
    assert r.compute_s == pytest.approx(compute, rel=0.01)


@pytest.mark.parametrize("ranks, micro", [(2, 4), (4, 2), (5, 8)])
def test_pipeline_gradients_equal_one_process(ranks, micro):
    width, layers, batch = 64, 4, 64
    loss, ref, _ = torch_reference(width, layers, batch)
    res = netlab.run(pipeline.pp_step, ranks=ranks, network=NET, device=DEV, width=width, layers=layers,
                      batch=batch, micro_batches=micro, return_grads=True)
    assert sum(v["loss"] for v in res.values) == pytest.approx(loss, rel=1e-5)
    held = {}
    for v in res.values:
        assert not held.keys() & v["grads"].keys()          # every layer on exactly one stage
        held.update(v["grads"])
    assert sorted(held) == list(range(layers + 1))
    for i, (dw, db) in held.items():
        torch.testing.assert_close(dw, ref[i][0], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(db, ref[i][1], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("ranks, micro, bandwidth, latency", [
    (4, 4, "100Gbit/s", "5us"), (5, 8, "100Gbit/s", "5us"),     # compute sets the pace
    (2, 4, "10Gbit/s", "50us"), (4, 8, "10Gbit/s", "50us"),     # a link is the slowest machine
])
def test_pipeline_bytes_and_time_are_the_gpipe_closed_form(ranks, micro, bandwidth, latency):
    width, layers, batch = 128, 4, 128
    net = network(bandwidth, latency)
    r = measure("pp", ranks=ranks, width=width, layers=layers, batch=batch, micro_batches=micro,
                bandwidth=bandwidth, latency=latency)
    assert r.bytes_per_step == 2 * (ranks - 1) * batch * width * 4
    # each stage's FLOPs on one micro-batch, counted by torch on the model's own layers
    model, mb = train.make_model(width, layers), batch // micro
    linears = [m for m in model if isinstance(m, nn.Linear)]
    f, b, params = [], [], []
    for s, (lo, hi) in enumerate(pipeline.partition(width, layers, ranks)):
        stage = nn.Sequential(*model[2 * lo:2 * hi])       # Linear, ReLU pairs (the last linear has none)
        x = torch.zeros(mb, linears[lo].in_features, requires_grad=s > 0)
        with FlopCounterMode(display=False) as fc:
            out = stage(x)
        fwd = fc.get_total_flops()
        bwd = flops(lambda: out.sum().backward())
        f.append(DEV.seconds(fwd))
        b.append(DEV.seconds(bwd))
        params.append(sum(q.numel() for q in stage.parameters()))
    c = net.nic.time(mb * width * 4)                         # one micro-batch's activations on a link
    # GPipe: every forward, then every backward, each m + p - 1 slots of its slowest machine (a stage,
    # or a link when the link is slower; equal stages and fast links: (m+p-1)(f+b)) plus the cuts'
    # transfers; then stage 0's optimizer (it finishes its backward last)
    m, p = micro, ranks
    expected = (sum(f) + (m - 1) * max(f + [c]) + sum(b) + (m - 1) * max(b + [c]) + 2 * (p - 1) * c
                + DEV.seconds(2 * params[0]))
    assert (c > max(f)) == (bandwidth == "10Gbit/s")         # both regimes are covered
    assert r.step_s == pytest.approx(expected, rel=0.01)


def test_gpipe_closed_form_reduces_to_the_bubble_for_equal_stages():
    """Equal stages: the step is (m+p-1) slots, of which each stage idles p-1: the bubble."""
    f, p, m = 1.0, 4, 8
    slots = pipeline._shop([f] * p, m) / f
    assert slots == m + p - 1
    assert 1 - m / slots == pytest.approx(pipeline.bubble(p, m))


def test_traffic_scales_with_the_batch_for_tp_and_pp_and_with_the_parameters_for_dp():
    kw = dict(ranks=4, width=64, layers=4)
    small = {m: measure(m, batch=64, **kw) for m in ("dp", "tp", "pp")}
    big = {m: measure(m, batch=256, **kw) for m in ("dp", "tp", "pp")}
    wide = measure("dp", batch=64, ranks=4, width=128, layers=4)
    # DP: the gradient, whatever the batch; in proportion to the parameters
    assert small["dp"].bytes_per_step == big["dp"].bytes_per_step == 2 * 3 * 4 * train.parameter_count(64, 4)
    assert wide.bytes_per_step / small["dp"].bytes_per_step == pytest.approx(
        train.parameter_count(128, 4) / train.parameter_count(64, 4))
    # TP and PP: activations, in proportion to the batch; PP sends the least of the three
    for m in ("tp", "pp"):
        assert big[m].bytes_per_step == 4 * small[m].bytes_per_step
    assert big["pp"].bytes_per_step < big["tp"].bytes_per_step
    assert big["pp"].bytes_per_step < big["dp"].bytes_per_step
    # TP overtakes DP between the two batches: 3 all-reduces of batch x width floats against one of the parameters
    assert 3 * 64 * 64 < train.parameter_count(64, 4) < 3 * 256 * 64
    assert small["tp"].bytes_per_step < small["dp"].bytes_per_step
    assert big["tp"].bytes_per_step > big["dp"].bytes_per_step
    # the same model and global batch: the three give the same loss
    assert small["tp"].loss == pytest.approx(small["dp"].loss, rel=1e-5)
    assert small["pp"].loss == pytest.approx(small["dp"].loss, rel=1e-5)


def test_the_formula_column_matches_the_runs():
    for r in experiment.compare(ranks=2, width=64, layers=2, batch=64, micro_batches=2):
        assert r.bytes_per_step == r.formula_bytes
        assert r.step_s == pytest.approx(r.formula_s, rel=0.01)


@pytest.mark.parametrize("kwargs, name", [
    (dict(mode="mp"), "mode"), (dict(mode="tp", ranks=3, width=64), "width"),
    (dict(mode="pp", ranks=4, layers=2), "ranks"), (dict(mode="pp", batch=100, micro_batches=8), "batch"),
    (dict(mode="dp", batch=6, ranks=4), "batch"), (dict(mode="pp", micro_batches=0), "micro_batches"),
    (dict(mode="tp", ranks=0), "ranks"), (dict(mode="dp", bandwidth="10furlongs"), "bandwidth"),
    (dict(mode="tp", width=3), "width"), (dict(mode="pp", micro_batches=2.0), "micro_batches"),
])
def test_bad_input_is_one_value_error_naming_the_parameter(kwargs, name, monkeypatch):
    def tripwire(*args, **kw):
        raise AssertionError("a rank pool was started")
    monkeypatch.setattr(shared, "run_on_pool", tripwire)
    with pytest.raises(ValueError, match=f"^{name}:"):
        measure(**kwargs)


def test_the_figure_draws_every_run_it_is_given():
    from matplotlib.figure import Figure

    from netlab.figures.parallel import modes_vs_bandwidth
    from netlab.codesign.parallel import ParallelResult

    def run(mode, gbit, step_s, sent):
        return ParallelResult(mode, 4, sent, step_s, 0.0, 0.0, sent, step_s, {"bandwidth_Bps": gbit * 1e9 / 8})
    runs = {"dp": [run("dp", 10, 3e-3, 5_000_000), run("dp", 1, 12e-3, 5_000_000)],
            "pp": [run("pp", 10, 4e-3, 1_500_000), run("pp", 1, 8e-3, 1_500_000)]}
    fig = modes_vs_bandwidth(runs, fig=Figure(figsize=(10, 3.4)))
    left, right = fig.axes
    drawn = [(list(line.get_xdata()), list(line.get_ydata())) for line in left.get_lines()]
    assert drawn == [([1.0, 10.0], [12.0, 3.0]), ([1.0, 10.0], [8.0, 4.0])]      # Gbit/s, ms, sorted by bandwidth
    assert [p.get_height() for p in right.patches] == [5.0, 1.5]                  # MB
