"""Elastic workers and saved servers: the state lives on the servers, so workers may come and go.

In a parameter server only the servers hold the model; a worker is a stateless gradient source.
So (Li et al., OSDI 2014, "elastic scalability"):

* a worker can leave between steps: from then on the servers wait for the others only;
* a new worker can join between steps: it pulls the current parameters, then computes like the rest;
* nothing is lost: every gradient pushed is applied exactly once. The servers keep the running
  sum of what they applied (``ServerState.applied``) and each worker the sum of what it pushed;
  ``lost_updates`` compares the two (and, for plain SGD, the weights with init - lr * applied);
* a server's state (values, momentum, versions, applied sums) can be saved and a later run started
  from it: the run continues exactly where the saved one stopped (a test checks bit equality).

Contrast: an all-reduce job has no such place for the state -- torchrun's elastic mode restarts
every worker on any membership change, and the script must checkpoint and resume. Membership here
is scheduled in the run's configuration (``roles.Membership``), and changes only under BSP; the
detection of failures (ps-lite's heartbeats) is left out.
"""
from __future__ import annotations

import copy

import numpy as np

from netlab.lazy import lazy
torch = lazy("torch", globals())
parameters_to_vector = lazy("torch.nn.utils:parameters_to_vector", globals())

from ..dataparallel import train
from ..runtime import launch
from .experiment import PSResult, assemble, run_ps
from .roles import Membership


def applied_sum(result: PSResult) -> np.ndarray:
    """What the servers applied, as one flat vector (sum over every update of every gradient)."""
    flat = np.empty(result.config.smap.numel, dtype=np.float32)
    for c in result.config.smap.chunks:
        flat[c.offset:c.offset + c.length] = result.states[c.server].applied[c.index]
    return flat


def lost_updates(result: PSResult) -> dict:
    """How far the servers' applied sum is from the workers' pushed sum (0 up to rounding: none lost)."""
    pushed = sum(w["pushed"] for w in result.workers)
    applied = applied_sum(result)
    out = {"max_abs_difference": float(np.abs(applied - pushed).max()),
           "pushed_norm": float(np.linalg.norm(pushed)), "pushes": sum(w["steps"] for w in result.workers)}
    cfg = result.config
    if cfg.momentum == 0 and cfg.restore is None:                  # plain SGD: weights = init - lr * sum
        init = launch.where_torch_is(initial_weights, cfg.width, cfg.layers, cfg.seed)
        out["weights_vs_init_minus_lr_sum"] = float(np.abs(assemble(result) - (init - cfg.lr * applied)).max())
    return out


def initial_weights(width: int, layers: int, seed: int) -> np.ndarray:
    """The model's initial weights, flat (what every server starts from)."""
    return parameters_to_vector(train.make_model(width, layers, seed).parameters()).detach().numpy()


def run_elastic(workers=4, servers=2, steps=20, leave=None, *, join=None, **kwargs) -> PSResult:
    """BSP training where some workers leave and others join between steps (see ``Membership``)."""
    membership = Membership(workers, steps, dict(leave or {}), dict(join or {}))
    return run_ps(workers=workers, servers=servers, steps=steps, mode="bsp", membership=membership, **kwargs)


def save(result: PSResult) -> list:
    """The servers' states at the end of a run: pass them as ``restore=`` to continue."""
    return [copy.deepcopy(state) for state in result.states]


def resume(saved: list, steps: int, start: int, **kwargs) -> PSResult:
    """Start servers from `saved` states and run steps start..steps-1 (workers pull first)."""
    return run_ps(steps=steps, start=start, restore=saved, **kwargs)
