"""Imported once by the fork server, so every rank starts as a fork with all of this already done.

torch.utils.flop_counter imports ~800 modules (sympy among them) on first use: about a second
per process, or several seconds for 8 ranks on 2 cores if each rank paid it. Here it is paid once
and shared copy-on-write, as is the digits data set.
"""
import torch  # noqa: F401
import torch.distributed  # noqa: F401

from .. import collectives, data  # noqa: F401
from ..dataparallel import train  # noqa: F401
from . import comm, rank_loop  # noqa: F401

train.step_flops(8, 1, 1)
try:
    data.load("all")
except FileNotFoundError:       # running outside a clone: ranks will say so if they need the data
    pass
