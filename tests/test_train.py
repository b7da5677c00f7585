"""The training step: real gradients equal a single process's; sizes and FLOPs match closed forms."""
import math

import pytest
import torch
import torch.nn.functional as F

import netlab
from netlab import collectives, data
from netlab.dataparallel import train


@pytest.mark.parametrize("ranks, batch", [(1, 16), (3, 8), (4, 5)])
def test_summed_gradients_equal_the_single_process_full_batch_gradient(ranks, batch):
    res = netlab.run(train.step, ranks=ranks, network=netlab.network("10Gbit/s", "5us"),
                     device=netlab.device("cpu-core"), width=64, batch=batch, return_grad=True)
    model = train.make_model(64, 2, seed=0)
    x, y = data.load("train")
    idx = torch.cat([train.batch_indices(0, r, ranks, batch, n=len(y)) for r in range(ranks)])
    loss = F.cross_entropy(model(x[idx]), y[idx])                    # mean over the global batch
    loss.backward()
    reference = train.flat_grad(model)
    for value in res.values:                                         # every rank holds the same sum
        torch.testing.assert_close(value["grad"], reference, rtol=1e-5, atol=1e-6)
    assert sum(v["loss"] for v in res.values) == pytest.approx(loss.item(), rel=1e-5)


def test_global_batches_do_not_overlap_between_ranks():
    idx = [train.batch_indices(3, r, 4, 16, n=1438).tolist() for r in range(4)]
    flat = sum(idx, [])
    assert len(flat) == len(set(flat)) == 64


def test_gradient_size_knob_spans_100KB_to_50MB():
    for width in (64, 128, 777, 3500):
        model = train.make_model(width, 2)
        assert train.parameter_count(width) == sum(p.numel() for p in model.parameters())
    assert 90e3 <= train.grad_bytes(128) <= 120e3
    assert 45e6 <= train.grad_bytes(3500) <= 55e6
    assert train.width_for_bytes(train.grad_bytes(1000)) == 1000


@pytest.mark.parametrize("width, layers, batch", [(8, 1, 1), (96, 3, 20), (128, 2, 32), (512, 2, 16), (33, 8, 7)])
def test_flop_count_is_what_torchs_flop_counter_counts_on_a_real_pass(width, layers, batch):
    """step_flops is written out; torch.utils.flop_counter on a real forward and backward is the reference."""
    from torch.utils.flop_counter import FlopCounterMode
    model = train.make_model(width, layers)
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(x), y).backward()
    assert train.step_flops(width, layers, batch) == counter.get_total_flops()


def test_bad_model_sizes_name_the_parameter():
    with pytest.raises(ValueError, match="^width:"):
        train.make_model(5000)
    with pytest.raises(ValueError, match="^layers:"):
        train.make_model(64, 0)
    with pytest.raises(ValueError, match="^batch:"):
        train.batch_indices(0, 0, 16, 1000, n=1438)


def test_data_parallel_training_learns_the_digits():
    res = netlab.run(train.train, ranks=2, network=netlab.network("10Gbit/s", "5us"),
                     device=netlab.device("cpu-core"), steps=150, width=64, batch=16, lr=0.1, eval_every=50)
    history = res.values[0]
    assert history["step"] == [50, 100, 150]
    assert history["accuracy"][-1] > 0.9
    assert history["time_s"] == sorted(history["time_s"]) and history["time_s"][0] > 0
    assert math.isnan(res.values[1]["accuracy"][0])                  # only rank 0 evaluates


def single_process(steps, ranks, batch, make_opt):
    """`steps` steps of one process on the whole global batch with `make_opt(parameters)`."""
    model = train.make_model(32, 2, seed=0)
    x, y = data.load("train")
    opt = make_opt(model.parameters())
    for t in range(steps):
        idx = torch.cat([train.batch_indices(t, r, ranks, batch, n=len(y)) for r in range(ranks)])
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach()


def fitted(comm, **kw):
    res = train.fit(comm, train.FitConfig(width=32, batch=8, eval_every=0, **kw))
    return torch.nn.utils.parameters_to_vector(res.model.parameters()).detach()


@pytest.mark.parametrize("optimizer, momentum, make_opt", [
    ("sgd", 0.9, lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9)),
    ("adam", 0.0, lambda params: torch.optim.Adam(params, lr=1e-3)),
])
def test_fit_trains_the_single_process_model_with_torch_optimizers(optimizer, momentum, make_opt):
    res = netlab.run(fitted, ranks=3, network=netlab.network("10Gbit/s", "5us"), device=netlab.device("cpu-core"),
                     steps=5, optimizer=optimizer, momentum=momentum, lr=0.1 if optimizer == "sgd" else 1e-3)
    reference = single_process(5, 3, 8, make_opt)
    # The sums differ only in float32 rounding (the ring's order against one backward over the batch);
    # Adam divides by sqrt(v) and so amplifies it for gradients near zero: 1 % of lr bounds that.
    for params in res.values:
        torch.testing.assert_close(params, reference, rtol=1e-5, atol=1e-5)


def test_bad_optimizer_names_the_parameter():
    model = train.make_model(32, 1)
    with pytest.raises(ValueError, match="^optimizer:"):
        train.make_optimizer(model, optimizer="lbfgs")
    with pytest.raises(ValueError, match="^momentum:"):
        train.make_optimizer(model, optimizer="adam", momentum=0.9)


def test_a_cached_initial_model_equals_a_fresh_one_and_leaves_the_rng_as_building_it_would():
    torch.manual_seed(7)
    reference = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    torch.manual_seed(7)
    [torch.nn.Linear(64, 32), torch.nn.Linear(32, 10)]
    after = torch.rand(4)                              # what the global RNG gives next, after building
    for _ in range(2):                                 # the first call builds, the second copies
        model = train.make_model(32, 1, seed=7)
        assert torch.equal(torch.rand(4), after)
        for mine, theirs in zip(model.parameters(), reference.parameters()):
            assert torch.equal(mine, theirs)
        with torch.no_grad():
            model[0].weight += 1                       # a caller's change never reaches the next copy


def _summed_by_tree(comm, flat, step):
    """A plain function as a sync, as exercise code writes one."""
    return collectives.allreduce(comm, flat, algo="tree")


def fitted_with_function(comm):
    cfg = train.FitConfig(width=32, batch=8, eval_every=0, steps=3, momentum=0.9)
    res = train.fit(comm, cfg, sync=_summed_by_tree)
    return torch.nn.utils.parameters_to_vector(res.model.parameters()).detach()


def test_a_plain_function_is_a_gradient_sync_and_trains_the_single_process_model():
    res = netlab.run(fitted_with_function, ranks=3, network=netlab.network("10Gbit/s", "5us"),
                     device=netlab.device("cpu-core"))
    reference = single_process(3, 3, 8, lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9))
    for params in res.values:
        torch.testing.assert_close(params, reference, rtol=1e-5, atol=1e-5)


class _Weights(train.Sync):
    returns = "weights"


def _old_style(comm, flat, step):
    return flat


_old_style.returns = "parameters"


@pytest.mark.parametrize("settings, name", [({"lr": -0.1}, "lr"), ({"steps": 2.5}, "steps"), ({"width": 3}, "width"),
                                            ({"optimizer": "lbfgs"}, "optimizer"), ({"eval_every": -1}, "eval_every"),
                                            ({"momentum": float("nan")}, "momentum"), ({"seed": -1}, "seed")])
def test_a_bad_fit_config_names_the_field(settings, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        train.FitConfig(**settings)


@pytest.mark.parametrize("sync", [42, _Weights(), _old_style])
def test_a_bad_sync_is_refused_before_training_with_the_parameter_named(sync):
    with pytest.raises(ValueError, match="^sync:"):
        train.fit(None, train.FitConfig(steps=1), sync=sync)


def test_fit_config_like_takes_the_shared_fields_of_another_config():
    from netlab.ps.config import Training
    cfg = train.FitConfig.like(Training(width=64, lr=0.3, momentum=0.5, eval_every=4), steps=7)
    assert (cfg.width, cfg.lr, cfg.momentum, cfg.eval_every, cfg.steps, cfg.batch) == (64, 0.3, 0.5, 4, 7, 32)
