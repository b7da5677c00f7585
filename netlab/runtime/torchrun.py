"""``netlab.run`` under torchrun: run the rank function here, on the real cluster's process group.

torchrun starts one process per rank and sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; each
process calls ``netlab.run(fn, ...)`` and gets every rank's result back, as from the local pool.
The clock is the wall clock unless a network is given to emulate.
"""
from __future__ import annotations

import atexit
import os
import time
from datetime import timedelta

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .comm import Comm
from .result import RunResult, assemble, pack

_run_ids = iter(range(1, 2**31 - 1))


def _leave_together() -> None:
    """Tear the group down we set up, after everyone is done: a process that exits with gloo's
    threads still running aborts ('terminate called without an active exception')."""
    if dist.is_initialized():
        try:
            dist.barrier()
        finally:
            dist.destroy_process_group()


def run_here(fn, args, kwargs, ranks, *, network, device) -> RunResult:
    world_size = int(os.environ["WORLD_SIZE"])
    if ranks is not None and ranks != world_size:
        raise ValueError(f"ranks: torchrun started {world_size} ranks but {ranks} were asked for")
    if not dist.is_initialized():
        backend = os.environ.get("NETLAB_BACKEND", "gloo")
        dist.init_process_group(backend, timeout=timedelta(seconds=float(os.environ.get("NETLAB_TIMEOUT", "300"))))
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        atexit.register(_leave_together)
    dist.barrier()                                  # start every rank's clock together
    started = time.perf_counter()
    comm = Comm(dist.get_rank(), world_size, network, device, tag=next(_run_ids))
    value = fn(comm, *args, **kwargs)
    everyone = [None] * world_size
    dist.all_gather_object(everyone, pack(comm, value))
    return assemble(everyone, network is not None, started)
