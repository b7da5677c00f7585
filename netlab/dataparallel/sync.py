"""How ``train.fit`` meets the other ranks after each backward pass: a sync object, as PyTorch's
``ddp_comm_hooks`` pair a hook with a state object (``register_comm_hook(state, hook)``).

A ``Sync`` is called as ``sync(comm, flat_grad, step)`` and says, in three class attributes, what
the loop does with what it returns:

    returns  "gradient": the summed gradient, which the loop's optimizer applies;
             "parameters": fresh flat parameters (a parameter server's pull), no optimizer here
    region   a label for the exchange on the trace (``comm.region``), or None
    label    a name for people (``"allreduce:ring"``)

Whatever a sync remembers between steps lives on the object (a parameter-server client, the bytes a
compressor sent, an error-feedback residual inside its pipeline), not in globals or function
attributes. ``AllReduce`` is the default. A plain function ``f(comm, flat_grad, step)`` is taken as a
gradient sync (``FunctionSync``), so exercise code can pass one without writing a class; a function
that carries ``returns``/``region`` attributes (the old protocol) is refused with the way to say it now.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .. import collectives

RETURNS = ("gradient", "parameters")


class Sync:
    """Base of every sync: subclass it, set the class attributes, keep the state on ``self``."""
    returns: Literal["gradient", "parameters"] = "gradient"
    region: str | None = None
    label: str = ""

    def __call__(self, comm, flat_grad, step: int):
        raise NotImplementedError(f"{type(self).__name__}: a Sync defines __call__(comm, flat_grad, step)")


@dataclass(frozen=True)
class AllReduce(Sync):
    """The default gradient synchronization: sum the flat gradient with an all-reduce (`algo`)."""
    algo: str = "ring"

    @property
    def label(self) -> str:
        return f"allreduce:{self.algo}"

    def __call__(self, comm, flat_grad, step: int):
        return collectives.allreduce(comm, flat_grad, algo=self.algo)


@dataclass(frozen=True)
class FunctionSync(Sync):
    """A plain function ``fn(comm, flat_grad, step) -> summed gradient`` as a gradient sync."""
    fn: object

    @property
    def label(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))

    def __call__(self, comm, flat_grad, step: int):
        return self.fn(comm, flat_grad, step)


def as_sync(sync) -> Sync:
    """`sync` as a ``Sync``: itself, a plain function wrapped as a gradient sync, None as ``AllReduce("ring")``."""
    if sync is None:
        return AllReduce("ring")
    if isinstance(sync, Sync):
        if sync.returns not in RETURNS:
            raise ValueError(f"sync: returns must be 'gradient' or 'parameters', got {sync.returns!r}")
        return sync
    if not callable(sync):
        raise ValueError(f"sync: must be a Sync or a function (comm, flat_grad, step) -> summed gradient, "
                         f"got {sync!r}")
    if hasattr(sync, "returns") or hasattr(sync, "region"):
        raise ValueError("sync: returns/region set on a function are no longer read; subclass "
                         "netlab.dataparallel.sync.Sync and set them as class attributes")
    return FunctionSync(sync)
