"""netlab's ring all-reduce and gloo's, on ranks in network namespaces behind shaped links, on the wall clock.

    rows = linux_ring.measure(ranks=4, sizes=["2M"], bandwidth="20Mbit/s", reps=3)
    rows[0]["ring_s"], rows[0]["gloo_s"], rows[0]["emulated_s"], rows[0]["emulated_framed_s"]

The namespace testbed of ``netns.py`` with one host namespace per rank (in a child process, so the
caller never imports torch); every host's NIC (its eth0's
egress) is a ``tc tbf`` at the link's rate with a two-frame bucket and a queue that never drops, and
the bridge between them is unshaped: each rank has a port of the link's rate in each direction, the
port model's assumption (``net/network.py``). One process imports torch, forks a rank into each
namespace and gives it the environment torchrun gives a rank (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, LOCAL_RANK), so ``netlab.run`` takes its torchrun path (``runtime/torchrun.py``): the
wall clock, gloo over the namespaces' TCP. Each size is timed ``reps`` times after a warm-up, for
netlab's ring (``collectives.allreduce(algo="ring")``) and for ``torch.distributed.all_reduce``, each
between barriers; the best of the repetitions is kept (delays on a busy machine only add).

Beside each: the emulator's time for the same ring, ``2(p-1)(alpha + (n/p)/B)`` without framing, and
with the framing the shaped link really carries (``net/framing.py``: TCP at MTU 1500, 1514-byte frames
for 1448-byte segments as tbf counts them, and the receiver's delayed ACKs on its own outgoing port).
alpha is measured: half the shortest round trip of a 4-byte gloo message between ranks 0 and 1 (of 20).
Needs root, ``ip``, ``tc`` and a machine idle enough to move the link's rate through veth and gloo
(``headroom`` measures it, unshaped, first).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

from .. import validate
from ..units import parse_bandwidth, parse_bytes
from .netns import InNamespace, Testbed, reap

PR_SET_PDEATHSIG = 1
PORT = 29617


def _allreduces(comm, sizes, reps):
    import torch
    import torch.distributed as dist

    from .. import collectives
    out = {}
    one, rtts = torch.zeros(1), []                      # alpha: half a small message's round trip, 0 <-> 1
    for _ in range(21):
        dist.barrier(group=comm.group)
        t0 = time.perf_counter()
        if comm.rank == 0:
            dist.send(one, 1, group=comm.group)
            dist.recv(one, 1, group=comm.group)
        elif comm.rank == 1:
            dist.recv(one, 0, group=comm.group)
            dist.send(one, 0, group=comm.group)
        rtts.append(time.perf_counter() - t0)
    out["alpha"] = min(rtts[1:]) / 2                   # the best, as for the transfers: delays only add
    for n in sizes:
        x = torch.ones(n // 4)
        for algo in ("ring", "gloo"):
            times = []
            for r in range(reps + 1):                  # the first is a warm-up (connections, plans)
                dist.barrier(group=comm.group)
                t0 = time.perf_counter()
                if algo == "gloo":
                    dist.all_reduce(x, group=comm.group)
                else:
                    collectives.allreduce(comm, x, algo="ring")
                if r:
                    times.append(time.perf_counter() - t0)
            out[f"{algo}:{n}"] = times
    return out


def _rank(rank: int, world: int, ns: str, master: str, port: int, w_fd: int, sizes, reps) -> None:
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    InNamespace(ns).__enter__()                        # this process lives in `ns` from now on
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK="0", MASTER_ADDR=master,
                      MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1",
                      NETLAB_TIMEOUT="120")
    from ..runtime.launch import run
    res = run(_allreduces, sizes, reps, ranks=world)
    if rank == 0:
        os.write(w_fd, (json.dumps(res.values[0]) + "\n").encode())


def _run(tb: Testbed, ranks: int, sizes, reps, timeout_s: float) -> dict:
    r_fd, w_fd = os.pipe()
    pids = []
    port = PORT + os.getpid() % 1000                   # one rendezvous port for all of this run's ranks
    for rank, ns in enumerate(tb.sender_ns[:ranks]):
        pid = os.fork()
        if pid == 0:                                   # a rank: never returns
            code = 0
            try:
                os.close(r_fd)
                _rank(rank, ranks, ns=ns, master=tb.sender_addr[0], port=port, w_fd=w_fd, sizes=sizes, reps=reps)
            except BaseException as e:                 # noqa: BLE001 -- reported to the parent
                os.write(w_fd, (json.dumps({"error": f"rank {rank}: {type(e).__name__}: {e}"[:2000]}) + "\n").encode())
                code = 1
            os._exit(code)
        pids.append(pid)
    os.close(w_fd)
    data, deadline = b"", time.monotonic() + timeout_s
    try:
        with os.fdopen(r_fd, "rb") as pipe:
            os.set_blocking(pipe.fileno(), False)
            while b"\n" not in data:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"shaped ring: no result within {timeout_s:.0f} s")
                chunk = pipe.read()
                if chunk:
                    data += chunk
                else:
                    time.sleep(0.05)
    finally:
        reap(pids)                                     # the ranks this process forked
    record = json.loads(data.splitlines()[0])
    if "error" in record:
        raise RuntimeError(record["error"])
    return record


def _fork_safe() -> None:
    if "torch" not in sys.modules:
        import torch  # noqa: F401  (imported once here, so every forked rank has it)


def measure(ranks: int = 4, sizes=("2M",), bandwidth="20Mbit/s", reps: int = 3, *, timeout_s: float = 300.0) -> list[dict]:
    """One row per size: the best measured ring and gloo times, and the emulator's without and with framing.

    Runs in a child process (``python -m netlab.linuxnet.linux_ring``), so the caller (a notebook kernel)
    never imports torch; bad input is refused here first."""
    validate.whole(ranks, "ranks", 2, 16, int_only=True)
    validate.whole(reps, "reps", 1, 100, int_only=True)
    parse_bandwidth(bandwidth)
    for size in sizes:
        parse_bytes(size, "sizes")
    cfg = {"ranks": ranks, "sizes": list(sizes), "bandwidth": bandwidth, "reps": reps, "timeout_s": timeout_s}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "netlab.linuxnet.linux_ring", json.dumps(cfg)], capture_output=True,
                          text=True, timeout=timeout_s + 60, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"shaped ring: the measuring process failed: {tail}")
    return json.loads(lines[-1])


def _measure_here(ranks: int, sizes, bandwidth, reps: int, timeout_s: float) -> list[dict]:
    from ..net.framing import Framing, ring_allreduce
    _fork_safe()
    rate = parse_bandwidth(bandwidth)
    sizes = [parse_bytes(s, "sizes") for s in sizes]
    framing = Framing("tcp", 1500, layer1=False)
    with Testbed(senders=ranks, bandwidth=rate, buffer=4 << 20, nic_rate="link") as tb:
        got = _run(tb, ranks, sizes=sizes, reps=reps, timeout_s=timeout_s)
    alpha = got["alpha"]
    rows = []
    for n in sizes:
        ring, gloo = min(got[f"ring:{n}"]), min(got[f"gloo:{n}"])
        plain = ring_allreduce(ranks, n, rate, alpha, framing=None)
        framed = ring_allreduce(ranks, n, rate, alpha, framing=framing)
        rows.append({"ranks": ranks, "bytes": n, "bandwidth_Bps": rate, "alpha_s": alpha,
                     "ring_s": ring, "gloo_s": gloo, "ring_all_s": got[f"ring:{n}"], "gloo_all_s": got[f"gloo:{n}"],
                     "emulated_s": plain, "emulated_framed_s": framed})
    return rows


def headroom(bandwidth="50Mbit/s", ranks: int = 4, size="2M") -> float:
    """How many times the link's rate this machine moves through unshaped veth and gloo (a ring
    all-reduce of `size` on `ranks` ranks, no tbf): below about 4 the CPU, not the link, sets the time."""
    _fork_safe()
    rate, n = parse_bandwidth(bandwidth), parse_bytes(size, "size")
    with Testbed(senders=ranks, bandwidth=rate, buffer=4 << 20, nic_rate=None) as tb:
        got = _run(tb, ranks, sizes=[n], reps=1, timeout_s=120.0)
    best = min(got[f"gloo:{n}"])
    moved = 2 * (ranks - 1) / ranks * n / best                 # bytes/s each rank sent
    return moved / rate


if __name__ == "__main__":
    print(json.dumps(_measure_here(**json.loads(sys.argv[1]))))
