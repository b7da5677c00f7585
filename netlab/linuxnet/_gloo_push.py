"""Real gloo ranks in the testbed's namespaces: workers push a gradient shard to one server rank.

    python -m netlab.linuxnet._gloo_push '{"server_ns": ..., "worker_ns": [...], "shard": 65536,
                          "rounds": 10, "phases": 1, "store": "/tmp/x/store", "timeout_s": 60}'

Run by `linux.ps_push` in its own process: it imports torch once, then forks one rank per
namespace (rank 0, the server, into the receiver's; rank i into sender i-1's), so startup costs one
torch import instead of N+1. Each child enters its namespace (setns) before gloo opens a socket,
binds gloo to that namespace's eth0 (GLOO_SOCKET_IFNAME) and meets the others through a FileStore:
the namespaces share the filesystem, not the network. Children die with this process (PDEATHSIG).

The measured rounds come in `phases`: between phases rank 0 writes `phase<k>.done` beside the
store and waits for `phase<k>.go`, so the caller can change the port's buffer or the routes'
rto_min while the connections stay open (ECN cannot change this way: it is negotiated at connect).

Each round is a synchronous parameter-server push: the server sends every worker a one-element
"go" tensor at once, every worker answers with its `shard` bytes (float32), and the round ends when
the server holds them all: the traffic of chapter 3's push, through a switch port with a small
queue. The first round of every phase is not measured: in phase 0 it opens gloo's connections, in
the others it lets every connection take an RTT sample under the new route (a socket's RTO is
recomputed from its route's rto_min only on its next ACK, so the first round would still wait
out a timer armed with the old value). Every rank prints one JSON line: the server its round
times, a worker its TCP counter deltas over the measured rounds.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
from datetime import timedelta

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .netns import InNamespace, read_counters, reap

PR_SET_PDEATHSIG = 1


def _rank_main(rank: int, ns: str, cfg: dict, out_fd: int) -> None:
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    InNamespace(ns).__enter__()                               # this process now lives in `ns` for good
    os.environ["GLOO_SOCKET_IFNAME"] = "eth0"
    torch.set_num_threads(1)
    world = len(cfg["worker_ns"]) + 1
    store = dist.FileStore(cfg["store"], world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=cfg["timeout_s"]))
    elements = cfg["shard"] // 4                         # float32 gradient shard
    go = torch.zeros(1)
    rounds, phases = cfg["rounds"], cfg["phases"]
    record: dict = {"rank": rank}
    if rank == 0:
        bufs = [torch.empty(elements) for _ in range(world)]
        record["round_s"] = [[] for _ in range(phases)]
        for p in range(phases):
            if p > 0:
                _wait_for_go(cfg, p)
            for r in range(rounds + 1):                  # round 0 of a phase is not measured (below)
                t0 = time.perf_counter()
                sends = [dist.isend(go, dst=w) for w in range(1, world)]
                recvs = [dist.irecv(bufs[w], src=w) for w in range(1, world)]
                for work in sends + recvs:
                    work.wait()
                if r > 0:
                    record["round_s"][p].append(time.perf_counter() - t0)
    else:
        shard = torch.full((elements,), float(rank))
        record["counters"] = []
        for p in range(phases):
            for r in range(rounds + 1):
                if r == 1:                               # first measured round of the phase
                    before = read_counters(ns)
                dist.recv(go, src=0)
                dist.send(shard, dst=0)
            after = read_counters(ns)
            record["counters"].append({k: after.get(k, 0) - before.get(k, 0)
                                       for k in ("TcpExtTCPTimeouts", "TcpRetransSegs")})
    dist.barrier()
    dist.destroy_process_group()
    os.write(out_fd, (json.dumps(record) + "\n").encode())


def _wait_for_go(cfg: dict, phase: int) -> None:
    """Between phases the launcher's caller reconfigures the port or the routes: say so, then wait."""
    base = os.path.join(os.path.dirname(cfg["store"]), f"phase{phase}")
    open(base + ".done", "w").close()
    deadline = time.monotonic() + cfg["timeout_s"]
    while not os.path.exists(base + ".go"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no go for phase {phase} within {cfg['timeout_s']} s")
        time.sleep(0.01)


def main(cfg: dict) -> list[dict]:
    namespaces = [cfg["server_ns"]] + list(cfg["worker_ns"])
    # torch is imported here, once, before the forks: each rank starts with it (copy-on-write). Left to
    # the lazy globals, every rank imported it after its fork: N + 1 imports, not one.
    torch.set_num_threads(1)
    dist.is_available()
    r_fd, w_fd = os.pipe()
    pids = []
    for rank, ns in enumerate(namespaces):
        pid = os.fork()
        if pid == 0:                                     # child: one rank, never returns
            code = 0
            try:
                os.close(r_fd)
                _rank_main(rank, ns, cfg, w_fd)
            except BaseException as e:                   # report, then leave without cleanup handlers
                os.write(w_fd, (json.dumps({"rank": rank, "error": f"{type(e).__name__}: {e}"[:3000]}) + "\n").encode())
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(w_fd)
    deadline = time.monotonic() + cfg["timeout_s"]
    data = b""
    try:
        with os.fdopen(r_fd, "rb") as pipe:
            os.set_blocking(pipe.fileno(), False)
            while len([ln for ln in data.splitlines() if ln]) < len(namespaces):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"gloo push: ranks did not finish in {cfg['timeout_s']} s")
                chunk = pipe.read()
                if chunk:
                    data += chunk
                    if b'"error"' in chunk:
                        break
                else:
                    time.sleep(0.02)
    finally:
        reap(pids)                                       # the ranks this process forked
    records = [json.loads(ln) for ln in data.splitlines() if ln]
    errors = [r for r in records if "error" in r]
    if errors:
        raise RuntimeError(f"gloo push: rank {errors[0]['rank']} failed: {errors[0]['error']}")
    return sorted(records, key=lambda r: r["rank"])


if __name__ == "__main__":
    try:
        print(json.dumps(main(json.loads(sys.argv[1]))))
    except (TimeoutError, RuntimeError) as e:
        print(str(e), file=sys.stderr)
        sys.exit(2)
