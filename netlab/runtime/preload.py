"""Imported once by the fork server, so every rank starts as a fork with all of this already done.

torch, torch.distributed and netlab's rank-side modules are imported here once and shared
copy-on-write, as is the digits data set. torch.utils.flop_counter is not: it imports ~800 more modules
(sympy among them) on first use, a second and 69 MB, and ranks do not count FLOPs
(``train.step_flops`` is its closed form); the one rank that takes chapter 7's backward profile
(``buckets.backward_profile``) pays it once.
"""
import torch  # noqa: F401
import torch.distributed  # noqa: F401

from .. import collectives, data  # noqa: F401
from ..dataparallel import train  # noqa: F401
from . import comm, rank_loop  # noqa: F401

try:
    data.load("all")
except FileNotFoundError:       # running outside a clone: ranks will say so if they need the data
    pass
