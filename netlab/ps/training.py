"""Training chapter 1's MLP on the digits through parameter servers: the function every rank runs.

Workers run chapter 1's loop (``netlab.dataparallel.train.fit``) with ``PushPull`` as its sync: they compute
forward and backward on their slice of each global batch (the loss is summed and divided by the
global batch, so the sum of the workers' gradients is the full batch's gradient), push the gradient,
and pull the parameters the servers hold. Servers run ``DenseServer``. Under BSP this is the same
arithmetic as all-reduce training with momentum SGD (a test checks the final weights against
``netlab.dataparallel.train``). Under ASP/SSP each push is applied on its own, so a round of p pushes moves the
model as far as one BSP step, on staler values.

Stragglers: worker w's compute takes ``slowdown[w]`` times the modelled duration (FLOPs / device).
Worker 0 evaluates test accuracy every ``eval_every`` steps (not charged to the clock).

What a rank returns holds numpy arrays, not tensors (the servers' states, the pushed sum, worker 0's
parameters), so the notebook kernel that receives them need not import torch; saved server states
sent back as ``restore`` become tensors again on the server's rank.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from netlab.lazy import lazy
torch = lazy("torch", globals())
parameters_to_vector = lazy("torch.nn.utils:parameters_to_vector", globals())

from ..dataparallel import train
from .config import PSConfig
from .server import DenseServer, ServerState
from .worker import PSClient


def rank_main(comm, cfg: PSConfig) -> dict:
    """Dispatch on role: a server serves, a worker trains."""
    role = cfg.roles.role(comm.rank)
    if role == "server":
        server = comm.rank - cfg.roles.workers
        if cfg.restore is not None:
            cfg = dataclasses.replace(cfg, restore=tuple(as_tensors(s) for s in cfg.restore))
        init = parameters_to_vector(train.make_model(cfg.width, cfg.layers, cfg.seed).parameters()).detach()
        state = DenseServer(comm, cfg, server, init).serve()
        return {"role": "server", "server": server, "state": as_arrays(state)}
    return worker_main(comm, cfg, comm.rank)


def _map_state(state: ServerState, convert) -> ServerState:
    each = lambda d: {k: convert(v) for k, v in d.items()}  # noqa: E731
    return ServerState(values=each(state.values), momentum=each(state.momentum), version=dict(state.version),
                       applied=each(state.applied), records=list(state.records), gaps=list(state.gaps))


def as_arrays(state: ServerState) -> ServerState:
    """A server's state with numpy arrays for tensors (what the kernel receives)."""
    return _map_state(state, lambda t: t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t))


def as_tensors(state: ServerState) -> ServerState:
    """A saved state (numpy arrays or tensors) with tensors again, for a server to start from."""
    return _map_state(state, lambda a: a.clone() if isinstance(a, torch.Tensor) else torch.from_numpy(np.array(a)))


def _slice(cfg: PSConfig, w: int, step: int) -> tuple[int, int]:
    """(position among the step's workers, how many workers share the step's global batch)."""
    if cfg.mode == "bsp":
        members = cfg.members(step)
        return members.index(w), len(members)
    return w, cfg.roles.workers


class PushPull(train.Sync):
    """A worker's ``PSClient`` as ``train.fit``'s sync: push the gradient, pull fresh parameters.

    Returns None when the worker is not sent parameters this step (a BSP step it leaves after), and
    keeps the sum of every gradient it pushed (the elastic check)."""
    returns, region = "parameters", "push/pull"

    def __init__(self, client: PSClient, cfg: PSConfig, steps: range):
        self.client, self.cfg, self.steps = client, cfg, steps
        self.pushed = torch.zeros(cfg.smap.numel)

    def __call__(self, comm, grad: torch.Tensor, step: int) -> torch.Tensor | None:
        self.pushed += grad
        pull = self.cfg.mode != "bsp" or self.client.worker in self.cfg.membership.recipients(step)
        return self.client.push_pull(grad, step, last=step == self.steps.stop - 1, pull=pull)


def worker_main(comm, cfg: PSConfig, w: int) -> dict:
    client = PSClient(comm, cfg, w)
    steps = cfg.steps_of(w)
    sync = PushPull(client, cfg, steps)
    initial = client.pull(steps.start - 1) if len(steps) and cfg.initial_pull(w) else None
    fit = train.FitConfig(steps=steps, width=cfg.width, layers=cfg.layers, batch=cfg.batch, seed=cfg.seed,
                          eval_every=cfg.eval_every, eval_from=cfg.start)
    res = train.fit(comm, fit, sync=sync, initial=initial, batch_slice=lambda t: _slice(cfg, w, t),
                    slow=lambda t: cfg.slow(w, t))
    return {"role": "worker", "worker": w, "history": res.evaluated(w), "pushed": sync.pushed.numpy(),
            "comm_s": client.comm_s, "steps": len(steps),
            "params": parameters_to_vector(res.model.parameters()).detach().numpy() if w == 0 else None}
