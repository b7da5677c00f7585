"""netlab: a teaching lab on the network side of distributed deep-learning training.

Real torch.distributed ranks (gloo on CPU) move real tensors; an emulated network turns bytes into
(virtual) time. Start with ``netlab.run(fn, ranks=4, network=netlab.network('10Gbit/s', '5us'))``.
"""
from .runtime import interrupt as _interrupt

if _interrupt.running_as_command():        # first, before torch: Ctrl-C at any moment gives one line
    _interrupt.install()

from .runtime.errors import Interrupted, RankDied, RankError, RankTimeout
from .runtime.launch import run
from .runtime.pool import Cluster
from .runtime.result import RunResult
from .runtime.shared import get_cluster, set_idle_timeout, shutdown
from .runtime.shared import trim_when_kernel_idles as _trim_when_kernel_idles
from .runtime.comm import Comm
from .net import DEVICES, LINKS, Device, Link, Network, device, network
from .net.network import congestion
from .fabric.congestion import Congestion
from .runtime.trace import Trace
from . import check  # noqa: E402  (exercise checks: netlab.check.step_time, ...)

_trim_when_kernel_idles()                 # a notebook kernel hands freed heap back after each cell

__version__ = "0.1.0"
__all__ = ["run", "get_cluster", "shutdown", "set_idle_timeout", "Cluster", "RankError", "RankDied", "RankTimeout", "Interrupted",
           "RunResult",
           "Comm", "Trace", "congestion", "Congestion", "Network", "Link", "network", "Device", "device", "LINKS", "DEVICES"]
