"""Data-parallel training of a small MLP on the digits, with gradients synchronized through ``comm``.

Every rank holds the same model (same seed), takes its own slice of each global batch, computes
forward and backward for real, and the ranks then sum their gradients (an all-reduce, or any
``sync`` a later chapter plugs in: a parameter server, a compressor). Each rank's loss is its
summed loss over the *global* batch size, so the summed gradient equals the full-batch gradient
of a single process exactly -- a test checks it.

``fit`` is the one training loop of the package: chapter 1's ``train`` and ``step``, compressed
training, the parameter-server worker, the summation service and the all-reduce baseline all run
it, and differ only in their sync object (a ``Sync``, ``sync.py``: ``sync(comm, flat, step)`` gives a
summed gradient, or fresh parameters from servers), their ``FitConfig`` (one frozen object: model,
batches, optimizer, evaluation, stopping on a non-finite gradient) and what varies per rank
(stragglers, a worker's batch slice, an initial pull). The optimizer is ``torch.optim``'s SGD (with momentum) or Adam.
Left out: learning-rate schedules, gradient accumulation, mixed precision, checkpoints. It is one
file over 300 lines because it is one concept: the loop and what it is made of (the model, its
batches, its optimizer, its config).

Time: under an emulated network the forward/backward advance the virtual clock by their FLOPs
(as ``torch.utils.flop_counter`` counts them: ``step_flops``) over the device's peak times its
efficiency, and so does the optimizer (``optimizer_flops``); on the wall clock they take what they
take.

Model size is the knob: two hidden layers of `width` give ~100 KB of fp32 gradients at width 128
and ~50 MB at width 3500.

One concept: the one training loop (``fit``) with its config and the pieces it alone uses (batches, the
model's FLOPs, evaluation).
"""
from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass, fields

from netlab.lazy import lazy
torch = lazy("torch", globals())
F = lazy("torch.nn.functional", globals())
nn = lazy("torch.nn", globals())
vector_to_parameters = lazy("torch.nn.utils:vector_to_parameters", globals())

from .. import data, seeds, validate
from .sync import AllReduce, Sync, as_sync  # noqa: F401  (Sync: train.Sync, the type fit takes)

MIN_WIDTH, MAX_WIDTH = 8, 4096


def param_shapes(width: int = 512, layers: int = 2) -> list[tuple[int, ...]]:
    """The shapes of ``make_model(width, layers)``'s parameters, in order (no torch needed)."""
    check_model(width, layers)
    dims = [64] + [width] * layers + [10]
    return [shape for i in range(len(dims) - 1) for shape in ((dims[i + 1], dims[i]), (dims[i + 1],))]


def make_model(width: int = 512, layers: int = 2, seed: int = 0) -> nn.Sequential:
    """MLP 64 -> width (x layers, ReLU) -> 10, initialized from `seed` (identical on every rank).

    Leaves torch's global RNG as ``torch.manual_seed(seed)`` followed by the initialisation would.
    Small models are built once per process and copied after that: initialising is most of a rank's
    work in chapter 1's one-step panel (3.5 ms of a 6 ms step at width 512)."""
    check_model(width, layers)
    key = (width, layers, seed)
    cached = _INITIAL.get(key)
    if cached is None:
        torch.manual_seed(seed)
        dims = [64] + [width] * layers + [10]
        mods: list[nn.Module] = []
        for i in range(len(dims) - 1):
            mods.append(nn.Linear(dims[i], dims[i + 1]))
            if i < len(dims) - 2:
                mods.append(nn.ReLU())
        model = nn.Sequential(*mods)
        if parameter_count(width, layers) > _CACHE_PARAMS:
            return model
        cached = _INITIAL[key] = (model, torch.get_rng_state())
        while len(_INITIAL) > 4:
            _INITIAL.pop(next(iter(_INITIAL)))
    model, rng = cached
    torch.set_rng_state(rng)
    return copy.deepcopy(model)


_INITIAL: dict = {}              # (width, layers, seed) -> (initial model, RNG state after building it)
_CACHE_PARAMS = 1 << 20          # models cached: up to 4 MB of fp32 weights each, 4 of them


def check_model(width, layers) -> None:
    validate.whole(width, "width", MIN_WIDTH, MAX_WIDTH, int_only=True)
    validate.whole(layers, "layers", 1, 8, int_only=True)


def parameter_count(width: int, layers: int = 2) -> int:
    """Weights and biases of make_model(width, layers)."""
    return (64 + 1) * width + (layers - 1) * (width + 1) * width + (width + 1) * 10


def grad_bytes(width: int, layers: int = 2) -> int:
    """Bytes of fp32 gradient one rank contributes per step."""
    return 4 * parameter_count(width, layers)


def width_for_bytes(nbytes: float, layers: int = 2) -> int:
    """The width whose fp32 gradient is closest to `nbytes` (inverse of grad_bytes)."""
    lo, hi = MIN_WIDTH, MAX_WIDTH
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if grad_bytes(mid, layers) < nbytes else (lo, mid)
    return min((max(lo - 1, MIN_WIDTH), lo), key=lambda w: abs(grad_bytes(w, layers) - nbytes))


def step_flops(width: int, layers: int, batch: int) -> int:
    """FLOPs of one forward + backward on `batch` samples, as ``torch.utils.flop_counter`` counts a real
    pass of ``make_model(width, layers)`` (a test compares the two over many shapes): 2*b*in*out for a
    linear layer's forward, as much again for its weight gradient and for its input gradient, and no
    input gradient for the first layer (the data needs none); biases, ReLUs and the loss count nothing.

    Written out rather than counted here: counting imports torch._dynamo on first use (~800 modules,
    sympy among them), about a second and 69 MB in a notebook kernel or a command that never trains."""
    check_model(width, layers)
    batch = validate.whole(batch, "batch", 1)
    dims = [64] + [width] * layers + [10]
    shapes = list(zip(dims, dims[1:]))
    forward = sum(2 * batch * i * o for i, o in shapes)
    return 2 * forward + sum(2 * batch * i * o for i, o in shapes[1:])


def batch_indices(step: int, rank: int, world_size: int, batch: int, *, n: int, seed: int = 0) -> torch.Tensor:
    """Rank `rank`'s `batch` samples of global batch `step` (world_size * batch samples, no overlap)."""
    per_epoch = n // (world_size * batch)
    if per_epoch == 0:
        raise ValueError(f"batch: {world_size} ranks x {batch} samples exceed the {n} training samples")
    epoch, i = divmod(step, per_epoch)
    order = torch.randperm(n, generator=seeds.torch_generator(seed, seeds.BATCHES, epoch))
    start = (i * world_size + rank) * batch
    return order[start:start + batch]


def flat_grad(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def set_flat_grad(model: nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    for p in model.parameters():
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))
        offset += n


def local_step(comm, model, x, y, *, idx, global_batch: int, flops: int | None, seconds: float | None = None) -> float:
    """Forward and backward on this rank's samples; returns its share of the global mean loss.

    Charged to the clock as `flops`, or as `seconds` when given (a straggler's stretched compute)."""
    model.zero_grad(set_to_none=False)
    with comm.compute(seconds=seconds, flops=None if seconds is not None else flops, label="forward+backward"):
        loss = F.cross_entropy(model(x[idx]), y[idx], reduction="sum") / global_batch
        loss.backward()
    return loss.item()


OPTIMIZERS = ("sgd", "adam")
ADAM_FLOPS = 13          # per element: torch's Adam update (two moments, square root, bias-corrected step)


def make_optimizer(model, *, optimizer: str = "sgd", lr: float = 0.1, momentum: float = 0.0) -> torch.optim.Optimizer:
    """``torch.optim.SGD`` (heavy-ball momentum when `momentum` > 0) or ``torch.optim.Adam`` on `model`."""
    if validate.choice(optimizer, "optimizer", OPTIMIZERS) == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    if momentum:                                   # "adam"
        raise ValueError(f"momentum: Adam keeps its own moments, got momentum={momentum!r}")
    return torch.optim.Adam(model.parameters(), lr=lr)


def optimizer_flops(opt: torch.optim.Optimizer) -> int:
    """FLOPs one step of `opt` is charged: 2 per element for SGD, 4 with momentum, ADAM_FLOPS for Adam."""
    n = sum(p.numel() for group in opt.param_groups for p in group["params"])
    if isinstance(opt, torch.optim.Adam):
        return ADAM_FLOPS * n
    return (4 if opt.param_groups[0]["momentum"] else 2) * n


def optimizer_step(comm, opt: torch.optim.Optimizer, charge: bool = True) -> None:
    """Step `opt` on the gradients in place, charged to the clock as its FLOPs unless `charge` is off."""
    if not charge:
        opt.step()
        return
    with comm.compute(flops=optimizer_flops(opt), label="optimizer"):
        opt.step()


def sgd_update(comm, model, lr: float) -> None:
    """One plain SGD step on the gradients in `model`, charged to the clock."""
    optimizer_step(comm, make_optimizer(model, lr=lr))


def accuracy(model, x, y) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


@dataclass
class Fit:
    """What ``fit`` leaves: the trained model and what happened on the way."""
    model: nn.Module
    history: dict            # at each evaluation: step, time_s, loss (this rank's share), accuracy (NaN off rank 0)
    comm_s: list             # per step: clock from the start of the sync to its end
    steps_done: int          # steps whose update was applied
    diverged: int | None     # the step whose synced gradient was not finite (when checked), else None
    loss: float | None       # the last step's loss share
    grad: torch.Tensor | None    # the last step's synced gradient (or parameters), as the sync returned it

    def evaluated(self, rank: int) -> dict:
        """Step, time and accuracy at each evaluation on rank 0; empty lists elsewhere."""
        keys = ("step", "time_s", "accuracy")
        return {k: list(self.history[k]) if rank == 0 else [] for k in keys}


@dataclass(frozen=True, kw_only=True)
class FitConfig:
    """What ``fit`` trains and how: the model, the batches, the optimizer, when to evaluate and stop.

    Frozen and keyword-only, checked when built (one ValueError naming the field), like
    ``ps.config.Training`` and ``compress.config.TrainConfig``; ``FitConfig.like(cfg, ...)`` takes
    the fields those share with it. What varies per rank or per step (the sync, a batch slice, a
    straggler's slowdown, a starting model) goes to ``fit`` beside the config.
    """
    steps: int | range = 100            # a count, or the range of global steps this rank runs
    width: int = 128
    layers: int = 2
    batch: int = 32                     # samples per rank per step
    lr: float = 0.1
    momentum: float = 0.0
    optimizer: str = "sgd"              # "sgd" (momentum SGD) or "adam", torch.optim's
    seed: int = 0
    eval_every: int = 10                # rank 0 evaluates every this many steps from `eval_from`, and after
    eval_from: int = 0                  # the last step; 0: never
    charge_optimizer: bool = True       # charge the optimizer's FLOPs to the clock
    stop_if_not_finite: bool = False    # stop when the synced gradient is not finite (the same on every rank)

    def __post_init__(self):
        if isinstance(self.steps, range):
            if self.steps.step != 1 or self.steps.start < 0:
                raise ValueError(f"steps: a range of global steps must count up by 1 from 0 or more, "
                                 f"got {self.steps!r}")
        else:
            validate.whole(self.steps, "steps", 0, 10_000_000, int_only=True)
        check_model(self.width, self.layers)
        validate.whole(self.batch, "batch", 1, 1 << 20, int_only=True)
        validate.positive(self.lr, "lr")
        validate.number(self.momentum, "momentum", 0.0, 1.0)
        validate.choice(self.optimizer, "optimizer", OPTIMIZERS)
        validate.seed(self.seed)
        validate.whole(self.eval_every, "eval_every", 0, None)
        validate.whole(self.eval_from, "eval_from", 0, None)

    @classmethod
    def like(cls, source, **overrides) -> "FitConfig":
        """The fields of `source` (a ``Training``, a ``TrainConfig``...) that this class has, then `overrides`."""
        names = [f.name for f in fields(cls)]
        taken = {k: getattr(source, k) for k in names if hasattr(source, k)}
        return cls(**{**taken, **overrides})


def fit(comm, config: FitConfig | None = None, *, sync=None, model: nn.Module | None = None,
        initial: torch.Tensor | None = None, batch_slice=None, slow=None) -> Fit:
    """The data-parallel loop every chapter trains with: batch, forward/backward, sync, optimizer, evaluate.

    config: the model, batches, optimizer and evaluation (``FitConfig``; default: its defaults).
    sync: a ``Sync`` (``netlab.dataparallel.sync``) or a plain function ``f(comm, flat_grad, step)``
    that returns the summed gradient (default: ring all-reduce). When ``sync.returns == "parameters"``
    it returns the fresh flat parameters (a parameter server's pull) and no optimizer runs here; None
    leaves the model as it is. ``sync.region``, when set, labels the exchange.
    model / initial: start from this model / these flat parameters (default: ``make_model``).
    batch_slice(step) -> (position, ranks sharing the global batch); default (comm.rank, comm.world_size).
    slow(step) -> the compute-time multiplier of this rank (a straggler); default none.
    Evaluation: rank 0's test accuracy, not charged to the clock.
    """
    cfg = validate.config(FitConfig, config, {})
    sync = as_sync(sync)
    returns, region = sync.returns, sync.region
    steps, width, layers, batch, seed = cfg.steps, cfg.width, cfg.layers, cfg.batch, cfg.seed
    eval_every = cfg.eval_every
    lr, momentum, optimizer, eval_from = cfg.lr, cfg.momentum, cfg.optimizer, cfg.eval_from
    charge_optimizer, stop_if_not_finite = cfg.charge_optimizer, cfg.stop_if_not_finite
    steps = range(steps) if isinstance(steps, int) else steps
    model = model if model is not None else make_model(width, layers, seed)
    x, y = data.load("train")
    xt, yt = data.load("test") if eval_every else (None, None)
    flops = step_flops(width, layers, batch) if comm.virtual else None   # the wall clock measures instead
    compute_s = comm.device.seconds(step_flops(width, layers, batch)) if slow and comm.device else None
    opt = make_optimizer(model, optimizer=optimizer, lr=lr, momentum=momentum) if returns == "gradient" else None
    if initial is not None:
        with torch.no_grad():
            vector_to_parameters(initial, model.parameters())
    out = Fit(model=model, history={"step": [], "time_s": [], "loss": [], "accuracy": []}, comm_s=[], steps_done=0,
              diverged=None, loss=None, grad=None)
    for t in steps:
        i, n = batch_slice(t) if batch_slice else (comm.rank, comm.world_size)
        idx = batch_indices(t, i, n, batch, n=len(y), seed=seed)
        seconds = compute_s * slow(t) if compute_s is not None else None
        out.loss = local_step(comm, model, x, y, idx=idx, global_batch=n * batch, flops=flops, seconds=seconds)
        start = comm.now()
        with comm.region(region) if region else contextlib.nullcontext():
            got = sync(comm, flat_grad(model), t)
        out.comm_s.append(comm.now() - start)
        out.grad = got
        if stop_if_not_finite and not torch.isfinite(got).all():     # identical on every rank: all stop together
            out.diverged = t
        elif returns == "gradient":
            set_flat_grad(model, got)
            optimizer_step(comm, opt, charge_optimizer)
        elif got is not None:
            with torch.no_grad():
                vector_to_parameters(got, model.parameters())
        if out.diverged is None:
            out.steps_done += 1
        last = t == steps[-1] or out.diverged is not None
        if eval_every and ((t + 1 - eval_from) % eval_every == 0 or last):
            out.history["step"].append(t + 1)
            out.history["time_s"].append(comm.now())
            out.history["loss"].append(out.loss)
            out.history["accuracy"].append(accuracy(model, xt, yt) if comm.rank == 0 else math.nan)
        if out.diverged is not None:
            break
    return out


def step(comm, width: int = 512, layers: int = 2, batch: int = 32, *, algo: str = "ring", lr: float = 0.1,
         seed: int = 0, return_grad: bool = False) -> dict:
    """One data-parallel training step from a fresh model; the rank function behind ``netlab step``."""
    res = fit(comm, FitConfig(steps=1, width=width, layers=layers, batch=batch, lr=lr, seed=seed, eval_every=0),
              sync=AllReduce(algo))
    out = {"loss": res.loss, "comm_s": res.comm_s[0], "grad_bytes": res.grad.numel() * 4}
    if return_grad:
        out["grad"] = res.grad
    return out


def train(comm, config: FitConfig | None = None, *, sync=None, **settings) -> dict:
    """Train with momentum SGD (0.9 unless `settings` say otherwise); history of (step, clock, loss share,
    test accuracy).

    config, or ``FitConfig``'s fields as keywords (steps=100, width=128, batch=32, lr=0.1, eval_every=10, ...).
    `loss` is this rank's share of the global-batch loss: summed over ranks it is the global loss.
    `sync(comm, flat_grad, step) -> flat_grad` sums gradients across ranks (a ``Sync`` or a plain function;
    default: ring all-reduce). Evaluation is not charged to the clock: it is not part of training.
    """
    cfg = validate.config(FitConfig, config, settings, momentum=0.9)
    return fit(comm, cfg, sync=sync).history
