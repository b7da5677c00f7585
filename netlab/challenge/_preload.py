"""Imported once by the grading host's fork server (``_host.py``), so that every entry's process and every
judging rank starts as a fork with all of this already done: torch, gloo, comm, the lab's blocks an
entry may use, the task's fabric, and the fabric's client (which the default preload leaves for each
rank to import).

Not the default preload (``runtime/preload.py``): its netlab modules (the training loop) and the
digits data set serve chapters, never a judged entry.
"""
import cloudpickle  # noqa: F401
import numpy.ma  # noqa: F401  (numpy imports it on a first np.unique: in each rank that routes, under the watch)
import torch  # noqa: F401
import torch.distributed  # noqa: F401

from .. import collectives  # noqa: F401
from ..cosim import flows, live  # noqa: F401
from ..net import fabrics, network, routing, topology  # noqa: F401
from ..runtime import comm, rank_loop  # noqa: F401
from . import _child, judge, tasks  # noqa: F401
