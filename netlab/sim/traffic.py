"""Traffic patterns that are not collectives, written as the same ``Step``s: parameter server, all-to-all.

* ``parameter_server(p, count, servers)``: ranks 0..k-1 are servers, each holding shard s of the
  model (``chunk_bounds(count, k)``); ranks k..p-1 are workers. Push: every worker sends shard s
  of its gradient to server s, all at once, and the server adds it up. Pull: every server sends
  its shard back to every worker. With one server its NIC's downlink carries (p-1) full
  gradients in the push -- the hotspot of chapter 3 -- and its uplink the same in the pull:
  2(p-1)(alpha + n/B) when nothing else limits (BytePS, OSDI'20, table 1, non-colocated PS).
* ``all_to_all(p, count)``: every rank sends chunk j of its buffer to rank j (MoE dispatch): the
  pattern that feels every bit of oversubscription.

Both run on real ranks too (``collectives.schedule.execute``) and in the simulator.
Left out: the PS's optimizer step and asynchrony (chapter 3, ``netlab.ps``).
"""
from __future__ import annotations

import numpy as np

from .. import validate
from ..collectives.schedule import Step, chunk_bounds


def parameter_server(p: int, count: int, servers: int = 1):
    """Push then pull, as two steps of (p-k) x k messages; ranks 0..servers-1 are the servers."""
    validate.whole(servers, "servers", 1, p - 1, int_only=True)          # the other ranks are workers
    offsets, lengths = chunk_bounds(count, servers)
    workers = np.arange(servers, p)
    worker = np.repeat(workers, servers)                 # (m,) each worker once per server
    server = np.tile(np.arange(servers), workers.size)  # (m,) shard s lives on server s
    yield Step(worker, server, offsets[server], lengths[server], reduce=True)      # push: n/k to each server
    yield Step(server, worker, offsets[server], lengths[server], reduce=False)     # pull: the new shard back


def all_to_all(p: int, count: int):
    """Every rank sends chunk j (n/p elements) to rank j, all at once: one step of p(p-1) messages."""
    offsets, lengths = chunk_bounds(count, p)
    src, dst = np.nonzero(~np.eye(p, dtype=bool))
    yield Step(src, dst, offsets[dst], lengths[dst], reduce=False)
