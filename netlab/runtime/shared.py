"""The shared pool behind ``netlab.run``, and its release when nobody has used it for a while.

One pool per driver, started on the first run and replaced by a larger one when more ranks are
asked for; smaller worlds run on a gloo subgroup of it. A pool nobody has used for ``IDLE_S``
seconds (``NETLAB_IDLE_S``, default 120) gives its ranks back, and so does an idle pool that another
kernel of the same user needs the memory of (``cooperate.py``). Left out: the pool itself
(``pool.py``) and choosing between this pool and torchrun (``launch.py``).
"""
from __future__ import annotations

import os
import sys
import threading

from .. import validate
from .memory import anon_share_bytes, trim_heap
from . import cooperate, death
from .pool import DEFAULT_TIMEOUT, Cluster, _live, _turn, check_ranks
from .pool import _lock as pool_lock
from . import memory as _memory

_default: Cluster | None = None


def get_cluster(ranks: int) -> Cluster:
    """A shared pool with at least `ranks` ranks, started (or replaced by a larger one) as needed.

    Smaller worlds run on the first ranks of the pool through a gloo subgroup, so moving a
    "nodes" slider down and up again costs no restart.
    """
    global _default
    check_ranks(ranks)
    with _turn(DEFAULT_TIMEOUT):
        pool = _pool(ranks)
        with _idle_lock:
            _arm_idle_release()
        return pool


# A pool that starts is checked against the memory that is free (memory.check_memory: ranks at
# LIGHT_RANK_BASE each, and the fork server if none runs), asking other notebooks' idle pools first,
# unless the run's own code checked it with its own estimate in the last CHECKED_S seconds. Without
# this, netlab.run on a function of the student's (or chapter 5's real-vs-simulator table) started
# eight ranks and a fork server unchecked, and the OOM killer made the room (issue 27).
CHECKED_S = 30.0


def _pool(ranks: int) -> Cluster:                    # caller holds pool._lock
    global _default
    if _default is None or not _default.alive or _default.world_size < ranks:
        if not _memory.checked_recently(ranks, CHECKED_S):      # netlab.run's own functions, a panel
            what = f"this run on {ranks} rank{'s' if ranks > 1 else ''}"
            check_memory(ranks, _memory.rank_bytes(0, 0, _memory.LIGHT_RANK_BASE), what)
        if _default is not None:
            _default.close(force=not _default.alive)
        _default = Cluster(ranks)
        _responder.ensure_running()                 # from now on, other kernels may ask for its ranks
    return _default


def run_on_pool(fn, args: tuple, kwargs: dict, ranks: int, *, network, device, timeout: float):
    """``netlab.run`` on the shared pool (started or enlarged as needed), with the idle release paused."""
    with _turn(timeout):                    # the pool cannot be replaced between choosing it and running
        with _idle_lock:
            _cancel_idle_release()
        try:
            return _pool(ranks).run(fn, *args, ranks=ranks, network=network, device=device, timeout=timeout,
                                    **kwargs)
        finally:
            with _idle_lock:
                _arm_idle_release()


def shutdown() -> None:
    """Stop the shared pool and give its memory back (it restarts, in a few seconds, on the next run).

    A chapter ends with ``netlab.shutdown()``: on Binder every open notebook's kernel shares 2 GB,
    and a pool left behind keeps its ranks until the idle release (``set_idle_timeout``) frees them.
    """
    global _default
    with _turn(DEFAULT_TIMEOUT):
        with _idle_lock:
            _cancel_idle_release()
        if _default is not None:
            _default.close()
            _default = None
        trim_heap()


# --- Idle release: a pool nobody has used for IDLE_S seconds gives its ranks back. ---------------
# A student who leaves a chapter's kernel open and moves on should not keep its ranks (~60-150 MB
# each) out of Binder's 2 GB. A threading.Timer fires after the last run; under _idle_lock it closes
# the pool only if no run is in progress (it cannot take pool._lock) and no run happened since it was
# armed (_armed).

def _idle_seconds(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else 120.0
    except ValueError:
        raise ValueError(f"NETLAB_IDLE_S: a number of seconds (0 or less: never release), got {text!r}") from None
    return value if value > 0 else None


IDLE_S: float | None = _idle_seconds(os.environ.get("NETLAB_IDLE_S"))   # seconds; None: keep the pool
_idle_lock = threading.Lock()
_idle_timer: threading.Timer | None = None
_armed = 0            # which arming the live timer belongs to (a timer from an older one does nothing)


def set_idle_timeout(seconds: float | None) -> None:
    """Give the shared pool's ranks back after `seconds` without a run (None or 0: never)."""
    global IDLE_S
    if seconds is not None:
        validate.number(seconds, "seconds", 0)
    with _idle_lock:
        IDLE_S = float(seconds) if seconds else None
        _arm_idle_release()


def _cancel_idle_release() -> None:          # caller holds _idle_lock
    global _idle_timer, _armed
    _armed += 1
    if _idle_timer is not None:
        _idle_timer.cancel()
        _idle_timer = None


def _arm_idle_release() -> None:             # caller holds _idle_lock
    global _idle_timer
    _cancel_idle_release()
    if IDLE_S is None or _default is None:
        return
    _idle_timer = threading.Timer(IDLE_S, _release_if_idle, args=(_armed,))
    _idle_timer.daemon = True
    _idle_timer.name = "netlab-idle-release"
    _idle_timer.start()


def _stop_forkserver_if_unused() -> None:
    """The fork server holds torch too (~150 MB of its own): stop it once no pool needs it, and then
    multiprocessing's resource tracker, which the fork server started and which nothing else here
    uses (6 MB of its own, 12 MB resident, in every kernel that ever ran ranks: about 50 MB of
    Binder's 2 GB with nine chapters open). Both start again with the next pool."""
    if not _live:
        from multiprocessing import forkserver, resource_tracker
        stop = getattr(forkserver._forkserver, "_stop", None)
        if stop is not None:
            stop()
        stop = getattr(resource_tracker._resource_tracker, "_stop", None)     # netlab registers nothing
        if stop is not None:                                                   # with it (pipes, an unnamed
            stop()                                                             # heap array)


def _holding() -> bool:
    """Whether this driver holds memory another kernel could ask for: the shared pool or the fork server."""
    return _default is not None or (not _live and death.forkserver_pid() is not None)


def release_for_another() -> int | None:
    """Give the shared pool and the fork server back now, for another kernel that needs the memory,
    unless a run is in progress (then None: a running pool is never interrupted). Returns the private
    memory those processes held, measured just before (bytes, their shares of it: memory.anon_share_bytes)."""
    global _default, _idle_timer
    if not pool_lock.acquire(blocking=False):
        return None
    try:
        with _idle_lock:
            _cancel_idle_release()
            pool, _default, _idle_timer = _default, None, None
        pids = list(pool.pids) if pool is not None and pool.procs else []
        if not _live and death.forkserver_pid() is not None:
            pids.append(death.forkserver_pid())
        held = sum(anon_share_bytes(pid) for pid in pids)
        if pool is not None:
            pool.close(force=True)                 # idle ranks: nothing to finish, and the asker waits
        _stop_forkserver_if_unused()
        trim_heap()
        return held
    finally:
        pool_lock.release()


_responder = cooperate.Responder(release_for_another, _holding)


def _release_if_idle(armed: int) -> None:
    global _default, _idle_timer
    if not pool_lock.acquire(blocking=False):
        return                                # a run is in progress: it re-arms the timer when it ends
    try:
        with _idle_lock:
            if armed != _armed or _default is None:
                return                        # a run happened since this timer was armed
            pool, _default, _idle_timer = _default, None, None
        pool.close(force=not pool.alive)
        _stop_forkserver_if_unused()
        trim_heap()                           # and the kernel's own freed heap (memory.trim_heap)
    finally:
        pool_lock.release()


# --- An idle kernel gives back its freed C heap. ------------------------------------------------
# A cell that builds large fabrics or simulations frees them when it is done, but glibc keeps the
# pages inside its heap, so the kernel's resident size stays at its peak (chapter 5's kernel: 60 MB
# more than needed after its scaling cell). TRIM_AFTER_S seconds after the last cell ran, the kernel
# trims its heap (memory.trim_heap; about 30-150 ms, on a timer thread while the student reads).

TRIM_AFTER_S = 5.0
_trim_timer: threading.Timer | None = None
_trim_lock = threading.Lock()


def _arm_trim(*_ignored) -> None:
    """post_run_cell: (re)start the countdown to one heap trim."""
    global _trim_timer
    with _trim_lock:
        if _trim_timer is not None:
            _trim_timer.cancel()
        _trim_timer = threading.Timer(TRIM_AFTER_S, lambda: trim_heap())
        _trim_timer.daemon = True
        _trim_timer.name = "netlab-heap-trim"
        _trim_timer.start()


def trim_when_kernel_idles() -> bool:
    """In an IPython kernel, trim the heap TRIM_AFTER_S after each cell (unless another cell runs
    first). True if registered now; nothing happens outside IPython (ranks, the command line)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "_netlab_heap_trim", False):
        return False
    shell.events.register("post_run_cell", _arm_trim)
    shell._netlab_heap_trim = True
    return True


def check_memory(ranks: int, per_rank_bytes: float, what: str = "this run", *, root: str = "/",
                 held: list[int] | None = None) -> None:
    """``netlab.runtime.memory.check_memory`` with `held` defaulting to the shared pool's ranks, which a run
    reuses or replaces (so the memory they hold counts as free for it), and the fork server counted
    when none runs for this notebook (the run will start one)."""
    pool = _default
    if held is None:
        held = list(pool.pids) if pool is not None and pool.alive else []
    forkserver = death.forkserver_pid() is None and not (pool is not None and pool.alive)
    _memory.check_memory(ranks, per_rank_bytes, what, root=root, held=held, forkserver=forkserver)
