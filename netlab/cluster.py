"""Real ranks from a notebook: a persistent pool of gloo processes that runs functions on N ranks.

    import netlab
    res = netlab.run(my_fn, ranks=8, network=netlab.network("10Gbit/s", "5us"))
    res.values        # what my_fn(comm, ...) returned on each rank
    res.trace         # every send/recv/compute event, per rank

How it is built, and why (see DESIGN.md, "Facts that shape the work"):
* Ranks are forked from a fork server that has torch preloaded (0.1-2 s instead of 8-40 s for
  spawn), each with one torch thread, and stay alive between runs: the second run of the same
  world size costs only the work itself. A smaller N runs on a gloo subgroup of the pool; a larger N
  replaces the pool with a larger one.
* The rendezvous is a file in a private temporary folder and gloo binds to loopback, so nothing
  listens beyond 127.0.0.1 and two labs on one machine never meet.
* Failures are loud and quick: a rank that raises gives ``RankError`` with its traceback as soon as
  it is reported; a rank that dies (exit, signal, segfault, OOM kill) gives ``RankDied`` naming the
  rank and its exit code or signal, and "out of memory?" only when the cgroup's OOM-kill counter
  went up; a run that does not finish in ``timeout`` seconds gives ``RankTimeout`` naming what each
  unfinished rank was waiting for; Ctrl-C / Kernel > Interrupt stops the ranks. In each case the
  pool is torn down and the next run starts a fresh one.
* Nothing is left behind: each rank leads its own process group, so whatever it starts is killed
  with it (SIGTERM, then SIGKILL 0.5 s later, every rank at once); ranks kill their group and exit
  when the launching process dies; temporary files live in one folder per driver (``_rundir``).
* Under torchrun (RANK/WORLD_SIZE set), ``run`` executes the function in this process on the real
  cluster's process group, with the wall clock, and gathers every rank's result.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import multiprocessing as mp
import multiprocessing.connection as mpc
import multiprocessing.spawn as mp_spawn
import os
import shutil
import signal
import tempfile
import threading
import time

import cloudpickle

from . import _death, _rundir, _worker
from .memory import LIGHT_RANK_BASE, check_memory, memory_limit, rank_bytes  # noqa: F401  (re-exported)
from .net.network import Network
from .net.presets import Device
from .result import RunResult, assemble  # noqa: F401  (re-exported: netlab.RunResult)

MAX_RANKS = int(os.environ.get("NETLAB_MAX_RANKS", "16"))
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    # importing torch._dynamo (torch.utils.flop_counter does) creates $TMPDIR/torchinductor_<user>;
    # keep it in this driver's folder instead, and the fork server and ranks inherit the setting
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_rundir.driver_dir(), "torchinductor")
DEFAULT_TIMEOUT = 60.0


class RankError(RuntimeError):
    """A rank raised; the message carries the rank and its traceback."""

    def __init__(self, rank: int, exc_type: str, message: str, tb: str):
        self.rank, self.exc_type, self.remote_message, self.remote_traceback = rank, exc_type, message, tb
        super().__init__(f"rank {rank} raised {exc_type}: {message}\n\n--- traceback on rank {rank} ---\n{tb}")


class RankDied(RankError):
    """A rank process died (exit, signal, segfault, OOM kill) instead of answering."""

    def __init__(self, rank: int, exitcode: int, oom: bool | None = None):
        self.exitcode = exitcode                       # negative: the signal's number, as Process.exitcode
        self.oom = oom                                 # True: its cgroup counted an OOM kill
        how = _death.describe(exitcode, oom)
        self.rank, self.exc_type, self.remote_message, self.remote_traceback = rank, "RankDied", how, ""
        RuntimeError.__init__(self, f"rank {rank} died: it {how}")


class RankTimeout(TimeoutError):
    """A run did not finish in time (a deadlock, or too much work for the timeout)."""


class Interrupted(KeyboardInterrupt):
    """The caller interrupted a run; the ranks were stopped."""


def check_ranks(ranks) -> int:
    if isinstance(ranks, bool) or not isinstance(ranks, int):
        raise ValueError(f"ranks: must be a whole number from 1 to {MAX_RANKS}, got {ranks!r}")
    if not 1 <= ranks <= MAX_RANKS:
        raise ValueError(f"ranks: must be from 1 to {MAX_RANKS}, got {ranks}")
    return ranks


# One run at a time on the pool. A widget callback may run on another kernel thread (JupyterLab's
# comms over subshells) while a cell runs on the main one: the second caller waits its turn.
_lock = threading.RLock()


@contextlib.contextmanager
def _turn(timeout: float):
    if not _lock.acquire(timeout=timeout):
        raise RankTimeout(f"the rank pool stayed busy with another run (a cell or a panel) for {timeout:g} s; "
                          f"try again when it has finished")
    try:
        yield
    finally:
        _lock.release()


class Cluster:
    """A pool of `world_size` rank processes in one gloo group, reused across runs."""

    _run_ids = itertools.count(1)

    def __init__(self, world_size: int, pg_timeout: float = 900.0, start_timeout: float = 120.0):
        # pg_timeout is gloo's own backstop; each run's `timeout` (enforced here, default 60 s) comes first
        self.world_size = check_ranks(world_size)
        self.pg_timeout = pg_timeout
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["netlab._preload"])
        # every file below lives in this driver's folder, swept by the next driver if this one is killed
        self._dir = tempfile.mkdtemp(prefix="rendezvous-", dir=_rundir.driver_dir())   # private (0700)
        _rundir.adopt_multiprocessing_tempdir()                # the fork server's socket folder
        self._oom = None
        self._status = ctx.Array("c", world_size * _worker.STATUS_BYTES, lock=False)
        alive_r, self._alive = ctx.Pipe(duplex=False)
        self._conns, self.procs = [], []
        self._groups = {world_size}
        try:
            with _without_main():
                for rank in range(world_size):
                    parent, child = ctx.Pipe()
                    p = ctx.Process(target=_worker.main, name=f"netlab-rank-{rank}", daemon=True,
                                    args=(rank, world_size, os.path.join(self._dir, "rendezvous"), child,
                                          alive_r, self._status, pg_timeout))
                    p.start()
                    child.close()
                    self._conns.append(parent)
                    self.procs.append(p)
            alive_r.close()
            self.pids = self._gather_ready(start_timeout)
            self._oom = _death.OomWatch(self.pids)
        except BaseException:
            self.close(force=True)
            raise
        _live.add(self)

    def _gather_ready(self, timeout: float) -> list[int]:
        pids = [None] * self.world_size
        deadline = time.monotonic() + timeout
        while any(p is None for p in pids):
            left = deadline - time.monotonic()
            if left <= 0:
                raise RankTimeout(f"ranks did not start within {timeout:.0f} s")
            ready = mpc.wait([c for c, p in zip(self._conns, pids) if p is None] + self._sentinels(),
                             timeout=min(left, 0.5))
            self._raise_if_died(ready)
            for conn in ready:
                rank = self._conns.index(conn)
                kind, detail = self._receive(rank, conn.recv)
                if kind == "failed":
                    raise RankError(rank, "StartupError", "could not join the gloo group", detail)
                pids[rank] = detail
        return pids

    def _sentinels(self) -> list[int]:
        return [p.sentinel for p in self.procs]

    def _receive(self, rank: int, read):
        """Read a rank's reply; a closed pipe means the rank died: say how (RankDied)."""
        try:
            return read()
        except (EOFError, OSError):
            self._raise_if_died(grace=1.0, first=rank)
            raise RankError(rank, "ConnectionClosed", "the rank closed its pipe to the launcher but did not exit",
                            "") from None

    def _raise_if_died(self, ready=(), grace: float = 0.0, first: int | None = None) -> None:
        """Raise RankDied for a dead rank (`first` if it is one of them), waiting up to `grace` s for one.

        A rank's death also breaks its peers' collectives (they report a gloo error): the dead rank
        is the cause, so it is the one named.
        """
        sentinels = self._sentinels()
        if grace > 0 and not set(ready) & set(sentinels):
            ready = mpc.wait(sentinels, timeout=grace)
        dead = [rank for rank, p in enumerate(self.procs) if p.sentinel in ready]
        if not dead:
            return
        rank = first if first in dead else dead[0]
        p = self.procs[rank]
        oom = self._oom.verdict(rank, p.pid) if self._oom is not None else None   # before reaping
        p.join(timeout=1.0)
        raise RankDied(rank, p.exitcode if p.exitcode is not None else -signal.SIGKILL, oom)

    def status(self) -> list[str]:
        """What each rank is waiting for right now ('' if it is not blocked in a receive or send)."""
        raw = bytes(self._status)
        size = _worker.STATUS_BYTES
        return [raw[i * size:(i + 1) * size].split(b"\0", 1)[0].decode(errors="replace")
                for i in range(self.world_size)]

    @property
    def alive(self) -> bool:
        return bool(self.procs) and all(p.exitcode is None for p in self.procs)

    def run(self, fn, *args, ranks: int | None = None, network: Network | None = None,
            device: Device | None = None, timeout: float = DEFAULT_TIMEOUT, **kwargs) -> RunResult:
        """Run ``fn(comm, *args, **kwargs)`` on ranks 0..ranks-1 (default: all); gather values and trace."""
        self._check_alive()
        n = self.world_size if ranks is None else check_ranks(ranks)
        if n > self.world_size:
            raise ValueError(f"ranks: this pool has {self.world_size} ranks, {n} were asked for")
        if not timeout > 0:
            raise ValueError(f"timeout: must be greater than zero, got {timeout!r}")
        with _turn(timeout):
            self._check_alive()                         # another thread's run may have ended this pool
            if network is None or network.congestion is None:
                return self._run(cloudpickle.dumps((fn, args, kwargs, network, device)), n, network, timeout)
            from .fabric.live import Coordinator        # a switch fabric times every message of this run
            fabric = Coordinator(n, network, self._dir).start()
            try:
                timed = dataclasses.replace(network, congestion=fabric.congestion)
                result = self._run(cloudpickle.dumps((fn, args, kwargs, timed, device)), n, network, timeout)
                fabric.settle()
            finally:
                fabric.close()
            if fabric.error is not None:
                raise RuntimeError(f"the congestion fabric failed: {fabric.error!r}") from fabric.error
            result.fabric = fabric.summary()
            return result

    def _check_alive(self) -> None:
        if not self.alive:
            if self.procs:                             # a rank died while the pool was idle
                try:
                    self._raise_if_died(grace=1.0)
                finally:
                    self.close(force=True)
            raise RuntimeError("this cluster was closed; use netlab.run or a new Cluster")

    def _run(self, payload: bytes, n: int, network, timeout: float) -> RunResult:
        run_id = next(self._run_ids) % (2**31 - 1)        # also the gloo tag: stale messages never match
        self._oom.refresh()
        started = time.perf_counter()
        try:
            if n not in self._groups:                      # a smaller world: a subgroup of the pool
                self._collect(self._conns, [("group", n)] * self.world_size, timeout)
                self._groups.add(n)
            replies = self._collect(self._conns[:n], [("run", run_id, n, payload)] * n, timeout)
        except KeyboardInterrupt:
            self.close(force=True)
            raise Interrupted("interrupted: the ranks were stopped; the next run starts a fresh pool") from None
        except BaseException:
            self.close(force=True)      # a failed rank may leave its peers blocked: start clean next time
            raise
        return assemble(replies, network is not None, started)

    def _collect(self, conns, messages, timeout: float) -> list:
        """Send one message to each rank, then wait for every reply, a failure, a death or the deadline."""
        for conn, message in zip(conns, messages):
            conn.send(message)
        pending = set(range(len(conns)))
        replies = [None] * len(conns)
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self._timeout(timeout, pending)
            ready = mpc.wait([conns[r] for r in pending] + self._sentinels(), timeout=min(left, 0.25))
            self._raise_if_died(ready)
            for conn in ready:
                rank = conns.index(conn)
                _, ok, body = cloudpickle.loads(self._receive(rank, conn.recv_bytes))
                if not ok:
                    self._raise_if_died(grace=0.2)       # a peer's death is the cause, not its gloo error
                    raise RankError(rank, *body)
                replies[rank] = body
                pending.discard(rank)
        return replies

    def _timeout(self, timeout, pending):
        waiting = [f"  rank {r}: {s or 'busy (computing, or inside a torch collective)'}"
                   for r, s in enumerate(self.status()) if r in pending]
        raise RankTimeout(f"run did not finish within {timeout:g} s; {len(waiting)} rank(s) still running "
                          f"(a deadlock? a send without a matching recv?):\n" + "\n".join(waiting))

    def close(self, force: bool = False) -> None:
        """Stop the ranks: politely when idle, by signal when forced. Leaves no process behind.

        Each rank leads its own process group: the signals go to the groups, so what a rank started
        (a subprocess, a pool of its own) goes with it. SIGTERM first, SIGKILL to whatever is still
        there 0.5 s later, every rank at once.
        """
        _live.discard(self)
        if not force:
            for conn in self._conns:
                try:
                    conn.send(None)
                except (OSError, ValueError):
                    pass
            _wait_all(self.procs, 2.0)
        _signal_groups(self.procs, signal.SIGTERM)
        _wait_all(self.procs, 0.5)
        _signal_groups(self.procs, signal.SIGKILL)       # the group may outlive its leader: kill it too
        for p in self.procs:
            p.join(timeout=2)
        for conn in self._conns:
            conn.close()
        if getattr(self, "_alive", None) is not None:
            self._alive.close()
            self._alive = None
        self.procs, self._conns = [], []
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _wait_all(procs, seconds: float) -> None:
    """Wait until every process has exited or `seconds` have passed (one deadline for all)."""
    deadline = time.monotonic() + seconds
    left = [p.sentinel for p in procs if p.exitcode is None]
    while left and time.monotonic() < deadline:
        done = mpc.wait(left, timeout=max(0.0, deadline - time.monotonic()))
        left = [s for s in left if s not in done]


def _signal_groups(procs, sig) -> None:
    for p in procs:
        if p.pid is None:
            continue
        try:
            os.killpg(p.pid, sig)                     # the rank's group (its pid: it called setsid)
        except (ProcessLookupError, PermissionError):
            pass
        if p.exitcode is None:                        # not reaped yet: also the rank itself, in case it
            try:                                      # was stopped before it could call setsid
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass


@contextlib.contextmanager
def _without_main():
    """Start ranks without re-running the caller's __main__ in them.

    multiprocessing's fork server re-imports the parent's main script in every child (the reason
    for the ``if __name__ == '__main__'`` idiom). Ranks never need it -- functions travel by
    cloudpickle -- so a plain script or a notebook can call ``netlab.run`` at top level.
    """
    original = mp_spawn.get_preparation_data

    def prepare(name):
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    mp_spawn.get_preparation_data = prepare
    try:
        yield
    finally:
        mp_spawn.get_preparation_data = original


_live: set[Cluster] = set()
_default: Cluster | None = None


@atexit.register
def _close_all() -> None:
    for cluster in list(_live):
        cluster.close(force=True)


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


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


def _pool(ranks: int) -> Cluster:                    # caller holds _lock
    global _default
    if _default is None or not _default.alive or _default.world_size < ranks:
        if _default is not None:
            _default.close(force=not _default.alive)
        _default = Cluster(ranks)
    return _default


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


# --- Idle release: a pool nobody has used for IDLE_S seconds gives its ranks back. ---------------
# A student who leaves a chapter's kernel open and moves on should not keep its ranks (~60-150 MB
# each) out of Binder's 2 GB. A threading.Timer fires after the last run; under _idle_lock it closes
# the pool only if no run is in progress (it cannot take _lock) and no run happened since it was
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
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or seconds != seconds or seconds < 0):
        raise ValueError(f"seconds: a number of seconds >= 0, or None, got {seconds!r}")
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


def _release_if_idle(armed: int) -> None:
    global _default, _idle_timer
    if not _lock.acquire(blocking=False):
        return                                # a run is in progress: it re-arms the timer when it ends
    try:
        with _idle_lock:
            if armed != _armed or _default is None:
                return                        # a run happened since this timer was armed
            pool, _default, _idle_timer = _default, None, None
        pool.close(force=not pool.alive)
        if not _live:                         # the fork server holds torch too (~150 MB): stop it
            from multiprocessing import forkserver
            stop = getattr(forkserver._forkserver, "_stop", None)
            if stop is not None:
                stop()
    finally:
        _lock.release()


def run(fn, *args, ranks: int | None = None, network: Network | None = None, device: Device | None = None,
        timeout: float = DEFAULT_TIMEOUT, **kwargs) -> RunResult:
    """Run ``fn(comm, *args, **kwargs)`` on `ranks` real gloo ranks (or on torchrun's ranks)."""
    if under_torchrun():
        from ._torchrun import run_here
        return run_here(fn, args, kwargs, ranks, network, device)
    if ranks is None:
        raise ValueError("ranks: how many ranks to run on (1 to %d)" % MAX_RANKS)
    check_ranks(ranks)
    with _turn(timeout):                    # the pool cannot be replaced between choosing it and running
        with _idle_lock:
            _cancel_idle_release()
        try:
            return _pool(ranks).run(fn, *args, ranks=ranks, network=network, device=device, timeout=timeout,
                                    **kwargs)
        finally:
            with _idle_lock:
                _arm_idle_release()
