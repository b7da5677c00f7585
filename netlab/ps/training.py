"""Training chapter 1's MLP on the digits through parameter servers: the function every rank runs.

Workers compute forward and backward on their slice of each global batch (exactly as in
``netlab.train``: the loss is summed and divided by the global batch, so the sum of the workers'
gradients is the full batch's gradient), push the gradient, and pull the parameters the servers
hold. Servers run ``DenseServer``. Under BSP this is the same arithmetic as all-reduce training with
momentum SGD (a test checks the final weights against ``netlab.train``). Under ASP/SSP each push is
applied on its own, so a round of p pushes moves the model as far as one BSP step, on staler values.

Stragglers: worker w's compute takes ``slowdown[w]`` times the modelled duration (FLOPs / device).
Worker 0 evaluates test accuracy every ``eval_every`` steps (not charged to the clock).
"""
from __future__ import annotations

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .. import data, train
from .config import PSConfig
from .server import DenseServer
from .worker import PSClient


def rank_main(comm, cfg: PSConfig) -> dict:
    """Dispatch on role: a server serves, a worker trains."""
    role = cfg.roles.role(comm.rank)
    if role == "server":
        server = comm.rank - cfg.roles.workers
        init = parameters_to_vector(train.make_model(cfg.width, cfg.layers, cfg.seed).parameters()).detach()
        state = DenseServer(comm, cfg, server, init).serve()
        return {"role": "server", "server": server, "state": state}
    return worker_main(comm, cfg, comm.rank)


def _slice(cfg: PSConfig, w: int, step: int) -> tuple[int, int]:
    """(position among the step's workers, how many workers share the step's global batch)."""
    if cfg.mode == "bsp":
        members = cfg.members(step)
        return members.index(w), len(members)
    return w, cfg.roles.workers


def worker_main(comm, cfg: PSConfig, w: int) -> dict:
    model = train.make_model(cfg.width, cfg.layers, cfg.seed)
    x, y = data.load("train")
    xt, yt = data.load("test")
    compute_s = comm.device.seconds(train.step_flops(cfg.width, cfg.layers, cfg.batch)) if comm.device else None
    client = PSClient(comm, cfg, w)
    steps = cfg.steps_of(w)
    history = {"step": [], "time_s": [], "accuracy": []}
    pushed = torch.zeros(cfg.smap.numel)                 # the sum of every gradient this worker pushed
    if len(steps) and cfg.initial_pull(w):
        vector_to_parameters(client.pull(steps.start - 1), model.parameters())
    for t in steps:
        i, n = _slice(cfg, w, t)
        idx = train.batch_indices(t, i, n, cfg.batch, len(y), cfg.seed)
        model.zero_grad(set_to_none=False)
        with comm.compute(seconds=compute_s and compute_s * cfg.slow(w, t), label="forward+backward"):
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx], reduction="sum") / (n * cfg.batch)
            loss.backward()
        grad = train.flat_grad(model)
        pushed += grad
        last = t == steps.stop - 1
        pull = cfg.mode != "bsp" or w in cfg.membership.recipients(t)
        with torch.no_grad(), comm.region("push/pull"):
            fresh = client.push_pull(grad, t, last=last, pull=pull)
            if fresh is not None:
                vector_to_parameters(fresh, model.parameters())
        done = t + 1 - cfg.start
        if w == 0 and cfg.eval_every and (done % cfg.eval_every == 0 or last):
            history["step"].append(t + 1)
            history["time_s"].append(comm.now())
            history["accuracy"].append(train.accuracy(model, xt, yt))
    return {"role": "worker", "worker": w, "history": history, "pushed": pushed, "comm_s": client.comm_s,
            "steps": len(steps), "params": parameters_to_vector(model.parameters()).detach() if w == 0 else None}
