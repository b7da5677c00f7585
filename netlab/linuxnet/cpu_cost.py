"""What a byte costs the CPU on the kernel's TCP path: two processes move data over loopback TCP.

RDMA's reason to exist is the host's CPU: kernel TCP copies every byte from the sender's memory into
the kernel and from the kernel into the receiver's, and runs the protocol per packet, on the hosts'
cores; an RDMA NIC runs the transport itself and moves the data between registered memory by DMA
(kernel bypass, zero copy). ``tcp_cpu_cost`` measures the first part on this machine: a sender
process writes ``total`` bytes with ``sendall`` in ``chunk``-byte pieces to a receiver process that
reads them with ``recv_into``, and each reports the CPU time (user and kernel, ``getrusage``) it
spent from the first byte to the last. Loopback has no NIC, so nothing is offloaded and no wire
limits the rate: the CPU is the only bottleneck, which is what is being measured.
"""
from __future__ import annotations

import json
import subprocess
import sys

from ..validate import whole

_CHILD = r"""
import json, resource, socket, sys, time
role, port, total, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime
if role == "recv":
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    print(srv.getsockname()[1], flush=True)
    conn, _ = srv.accept()
    buf = bytearray(chunk); view = memoryview(buf); got = 0
    n = conn.recv_into(view)                      # the clock starts at the first byte
    u0, s0 = usage(); t0 = time.perf_counter(); got = n
    while got < total:
        n = conn.recv_into(view)
        if not n:
            break
        got += n
else:
    conn = socket.create_connection(("127.0.0.1", port))
    data = memoryview(bytes(chunk)); sent = 0
    u0, s0 = usage(); t0 = time.perf_counter()
    while sent < total:
        conn.sendall(data[:min(chunk, total - sent)]); sent += min(chunk, total - sent)
    conn.shutdown(socket.SHUT_WR)
    conn.recv(1)                                  # wait for the receiver to close
    got = sent
u1, s1 = usage(); t1 = time.perf_counter()
conn.close()
print(json.dumps({"bytes": got, "user_s": u1 - u0, "sys_s": s1 - s0, "wall_s": t1 - t0}), flush=True)
"""


def tcp_cpu_cost(total: int = 256 * 2**20, chunk: int = 256 * 1024, timeout: float = 120.0) -> dict:
    """CPU seconds the kernel's TCP path takes to move ``total`` bytes between two local processes.

    Returns {"bytes", "wall_s", "GBps", "sender": {"user_s", "sys_s", "cpu_s"}, "receiver": {...},
    "cpu_s_per_GB": both ends together per 1e9 bytes}.
    """
    total, chunk = whole(total, "total", 1), whole(chunk, "chunk", 1)
    recv = subprocess.Popen([sys.executable, "-c", _CHILD, "recv", "0", str(total), str(chunk)],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(recv.stdout.readline())
        send = subprocess.Popen([sys.executable, "-c", _CHILD, "send", str(port), str(total), str(chunk)],
                                stdout=subprocess.PIPE, text=True)
        out_s, _ = send.communicate(timeout=timeout)
        out_r, _ = recv.communicate(timeout=timeout)
    finally:
        for p in (recv, *([send] if "send" in locals() else [])):
            if p.poll() is None:
                p.kill()
                p.wait()
    s, r = json.loads(out_s.splitlines()[-1]), json.loads(out_r.splitlines()[-1])
    if r["bytes"] != total:
        raise RuntimeError(f"tcp_cpu_cost: the receiver got {r['bytes']} of {total} bytes")
    ends = {name: {"user_s": d["user_s"], "sys_s": d["sys_s"], "cpu_s": d["user_s"] + d["sys_s"]}
            for name, d in (("sender", s), ("receiver", r))}
    wall = max(s["wall_s"], r["wall_s"])
    return {"bytes": total, "wall_s": wall, "GBps": total / wall / 1e9, **ends,
            "cpu_s_per_GB": (ends["sender"]["cpu_s"] + ends["receiver"]["cpu_s"]) / (total / 1e9)}
