"""Imported once by a judging sandbox's fork server (``runtime.pool.use_preload``, in ``_child.py``), so that every judging
rank starts as a fork with all of this already done: torch, gloo, comm, the lab's blocks an entry may
use, and the fabric's client (which the default preload leaves for each rank to import).

Not the default preload (``runtime/preload.py``): its netlab modules and the digits data set serve
chapters, never a judged entry, and a sandbox is a process of its own that starts its fork server for
one entry.
"""
import torch  # noqa: F401
import torch.distributed  # noqa: F401

from .. import collectives  # noqa: F401
from ..cosim import live  # noqa: F401
from ..runtime import comm, rank_loop  # noqa: F401
from . import judge  # noqa: F401
