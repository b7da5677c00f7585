"""The loop each rank process runs: join the gloo group once, then run tasks until told to stop.

Kept small and importable because the fork server preloads it (with torch) so that every rank
starts as a copy-on-write fork with torch already imported.
"""
from __future__ import annotations

import os
import signal
import threading
import traceback
from datetime import timedelta

STATUS_BYTES = 160          # per-rank slot in the shared status buffer


def _watch_parent(alive) -> None:
    """Exit at once when the launching process goes away (kernel killed or restarted), and take
    whatever this rank started with it: the rank leads its own process group."""
    try:
        alive.recv_bytes()
    except (EOFError, OSError):
        pass
    _leave_with_group()


def _leave_with_group() -> None:
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(3)


def _status_writer(buffer, rank: int):
    lo = rank * STATUS_BYTES
    view = memoryview(buffer).cast("B")              # one memcpy (a ctypes array's slice is set byte by byte)

    def write(text: str) -> None:                    # hot path: a few bytes and a NUL, no padding
        data = text.encode()[:STATUS_BYTES - 1] + b"\0"
        view[lo:lo + len(data)] = data
    return write


def main(rank: int, world_size: int, init_file: str, conn, *, alive, status_buffer, timeout_s: float) -> None:
    # Kernel > Interrupt signals the kernel's whole process group; the launcher decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A group (and session) of its own: the launcher stops the rank and everything it started with
    # one killpg, and a terminal's Ctrl-C or SIGHUP reaches the launcher only.
    os.setsid()
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"         # bind gloo to loopback only
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    threading.Thread(target=_watch_parent, args=(alive,), daemon=True).start()

    import cloudpickle
    import torch
    import torch.distributed as dist

    from .comm import Comm
    from .result import pack

    torch.set_num_threads(1)                         # 8 ranks on 2 cores: one thread each
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=timeout_s))
    except BaseException:
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready", os.getpid()))
    status = _status_writer(status_buffer, rank)

    groups = {world_size: None}                      # ranks 0..n-1 -> process group (None: all)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            # the launcher is gone: the same exit as the watcher thread's, which may not have run yet
            # (a normal exit here would end that daemon thread and leave what this rank started)
            _leave_with_group()
        if message is None:
            break
        if message[0] == "group":                    # every rank joins, members or not
            n = message[1]
            try:
                groups[n] = dist.new_group(list(range(n)), timeout=timedelta(seconds=timeout_s))
                conn.send_bytes(cloudpickle.dumps(("group", True, n)))
            except BaseException as exc:  # noqa: BLE001
                conn.send_bytes(cloudpickle.dumps(("group", False, (type(exc).__name__, "could not form the group",
                                                                    traceback.format_exc()))))
            continue
        _, run_id, n, payload = message
        try:
            fn, args, kwargs, network, device = cloudpickle.loads(payload)
            comm = Comm(rank, n, network, device, tag=run_id, status=status, group=groups[n])
            try:
                value = fn(comm, *args, **kwargs)
            finally:
                comm.finish()                        # a congestion fabric stops waiting for this rank
            reply = (run_id, True, pack(comm, value))
            data = cloudpickle.dumps(reply)
        except BaseException as exc:  # noqa: BLE001 -- every failure goes back to the caller
            data = cloudpickle.dumps((run_id, False, (type(exc).__name__, str(exc), traceback.format_exc())))
        try:
            conn.send_bytes(data)
        except (EOFError, OSError):
            _leave_with_group()                      # the launcher is gone (as above)
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 -- leaving anyway
        pass
