"""Imported once by the fork server, so every rank starts as a fork with all of this already done.

A rank's first ``torch.optim`` optimizer imports torch._dynamo (~800 modules, sympy among them; so
does torch.utils.flop_counter on first use): about a second per process, or several seconds for 8
ranks on 2 cores if each rank paid it. Here it is paid once and shared copy-on-write, as is the
digits data set.
"""
import torch
import torch.distributed  # noqa: F401

from .. import collectives, data  # noqa: F401
from ..dataparallel import train  # noqa: F401
from . import comm, rank_loop  # noqa: F401

torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
try:
    data.load("all")
except FileNotFoundError:       # running outside a clone: ranks will say so if they need the data
    pass
