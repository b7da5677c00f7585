"""A pool of rank processes: forked once, reused across runs, torn down leaving nothing behind.

    from netlab.runtime.pool import Cluster
    with Cluster(4) as pool:
        res = pool.run(my_fn, network=netlab.network("10Gbit/s", "5us"))

How it is built, and why (see DESIGN.md, "Facts that shape the work"):
* Ranks are forked from a fork server that has torch preloaded (0.1-2 s instead of 8-40 s for
  spawn), each with one torch thread, and stay alive between runs: the second run of the same
  world size costs only the work itself. A smaller N runs on a gloo subgroup of the pool.
* The rendezvous is a file in a private temporary folder and gloo binds to loopback, so nothing
  listens beyond 127.0.0.1 and two labs on one machine never meet.
* Failures are loud and quick: a rank that raises gives ``RankError`` with its traceback as soon as
  it is reported; a rank that dies (exit, signal, segfault, OOM kill) gives ``RankDied`` naming the
  rank and its exit code or signal, and "out of memory?" only when the cgroup's OOM-kill counter
  went up; a fork server that dies (at start-up, mid-run or between runs) gives ``RankDied`` naming
  the fork server and its signal the same way (never multiprocessing's bare EOFError or its "exit
  code 255" for ranks that still run); a run that does not finish in ``timeout`` seconds gives ``RankTimeout`` naming what each
  unfinished rank was waiting for; Ctrl-C / Kernel > Interrupt stops the ranks. In each case the
  pool is torn down and the next run starts a fresh one.
* Nothing is left behind: each rank leads its own process group, so whatever it starts is killed
  with it (SIGTERM, then SIGKILL 0.5 s later, every rank at once); ranks kill their group and exit
  when the launching process dies; temporary files live in one folder per driver (``rundir``).

Left out: the shared pool that ``netlab.run`` reuses and its idle release (``shared.py``), and
torchrun (``launch.py``).

One concept: the rank pool's lifetime, starting, reusing and tearing down the same processes.
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

from .. import validate
from ..net.network import Network
from ..net.presets import Device
from . import death, rank_loop, rundir
from .errors import Interrupted, RankDied, RankError, RankTimeout
from .result import RunResult, assemble

MAX_RANKS = int(os.environ.get("NETLAB_MAX_RANKS", "16"))
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    # importing torch._dynamo (torch.utils.flop_counter does) creates $TMPDIR/torchinductor_<user>;
    # keep it in this driver's folder instead, and the fork server and ranks inherit the setting
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(rundir.driver_dir(), "torchinductor")
DEFAULT_TIMEOUT = 60.0


def check_ranks(ranks) -> int:
    return validate.whole(ranks, "ranks", 1, MAX_RANKS, int_only=True)


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


PRELOAD = "netlab.runtime.preload"        # the module this process's fork server imports (use_preload)


def use_preload(module: str) -> None:
    """The module this process's fork server imports before any rank forks: ``runtime/preload.py`` (torch,
    the training loop and the data) unless told. A process that only judges challenge entries (its
    host, ``challenge/_host.py``) names a lighter one. Takes effect when the fork server next starts."""
    global PRELOAD
    PRELOAD = module


class Cluster:
    """A pool of `world_size` rank processes in one gloo group, reused across runs."""

    _run_ids = itertools.count(1)

    def __init__(self, world_size: int, pg_timeout: float = 900.0, start_timeout: float = 120.0):
        # pg_timeout is gloo's own backstop; each run's `timeout` (enforced here, default 60 s) comes first
        self.world_size = check_ranks(world_size)
        self.pg_timeout = pg_timeout
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload([PRELOAD])
        # every file below lives in this driver's folder, swept by the next driver if this one is killed
        self._dir = tempfile.mkdtemp(prefix="rendezvous-", dir=rundir.driver_dir())   # private (0700)
        rundir.adopt_multiprocessing_tempdir()                # the fork server's socket folder
        # until the ranks are up, an OOM kill is looked for in this process's cgroup (theirs, as a rule)
        self._oom = death.OomWatch([os.getpid()])
        self._fs_pid = death.forkserver_pid()
        self._started: list[str | None] = []
        self._status = ctx.Array("c", world_size * rank_loop.STATUS_BYTES, lock=False)
        alive_r, self._alive = ctx.Pipe(duplex=False)
        self._conns, self.procs = [], []
        self._groups = {world_size}
        try:
            with _without_main():
                for rank in range(world_size):
                    parent, child = ctx.Pipe()
                    p = ctx.Process(target=rank_loop.main, name=f"netlab-rank-{rank}", daemon=True,
                                    args=(rank, world_size, os.path.join(self._dir, "rendezvous"), child),
                                    kwargs={"alive": alive_r, "status_buffer": self._status, "timeout_s": pg_timeout})
                    failed = None
                    try:
                        p.start()
                    except (EOFError, OSError) as exc:   # the fork server did not answer: say why
                        failed = f"{type(exc).__name__}: {exc}"
                    finally:
                        child.close()
                    if failed is not None:                 # raised here, without the bare EOFError as context
                        self._raise_if_forkserver_died(wait=2.0, starting=rank)
                        raise RuntimeError(f"could not start rank {rank}: the fork server did not answer ({failed})")
                    self._fs_pid = death.forkserver_pid()   # started (or restarted) by the first start()
                    self._conns.append(parent)
                    self.procs.append(p)
                    self._started.append(death.start_time(p.pid))
            alive_r.close()
            self.pids = self._gather_ready(start_timeout)
            self._oom = death.OomWatch(self.pids + [self._fs_pid or os.getpid()])
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
        oom = self._oom.verdict(rank) if self._oom is not None else None   # before reaping
        p.join(timeout=1.0)
        if p.exitcode == 255:                # what multiprocessing reports when the fork server is gone
            self._raise_if_forkserver_died(wait=1.0)
        raise RankDied(rank, p.exitcode if p.exitcode is not None else -signal.SIGKILL, oom,
                       note=self._grew_note() if oom else "")

    def _grew_note(self) -> str:
        """After an OOM kill: what the memory check saw when it let the run start (memory.after_the_check)."""
        from .memory import after_the_check
        alive = [p.pid for r, p in enumerate(self.procs) if p.pid and death.running(p.pid, self._started[r])]
        return after_the_check(alive)

    def _raise_if_forkserver_died(self, wait: float, starting: int | None = None) -> None:
        """Raise RankDied naming the fork server if it died (waiting up to `wait` s to see it dead).

        The ranks do not need it to run, but their exit statuses reach this process through it, so
        the pool cannot tell a rank's death any more: the caller tears the pool down.
        """
        # while starting, the one start() just asked (it may have restarted a dead one); else the pool's own
        pid = (death.forkserver_pid() or self._fs_pid) if starting is not None else self._fs_pid
        code = death.forkserver_exit(pid, wait)
        if code is None:
            return
        index = len(self._oom.pids) - 1 if self._oom is not None else 0
        oom = self._oom.verdict(index) if self._oom is not None else None
        ended = [r for r, p in enumerate(self.procs) if p.pid and not death.running(p.pid, self._started[r])]
        running = [r for r in range(len(self.procs)) if r not in ended]
        note = f" while rank {starting} was being started" if starting is not None else ""
        if ended:
            note += f"; {_ranks(ended)} ended too (how cannot be read: the fork server reported it)"
        if running:
            note += f"; {_ranks(running)} still ran and were stopped"
        if oom:
            note += self._grew_note()
        note += ". The next run starts a fresh fork server and pool"
        raise RankDied(None, code, oom, process="fork server", pid=pid, note=note)

    def status(self) -> list[str]:
        """What each rank is waiting for right now ('' if it is not blocked in a receive or send)."""
        raw = bytes(self._status)
        size = rank_loop.STATUS_BYTES
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
        validate.positive(timeout, "timeout")
        with _turn(timeout):
            self._check_alive()                         # another thread's run may have ended this pool
            if network is None or network.congestion is None:
                return self._run(cloudpickle.dumps((fn, args, kwargs, network, device)), n, network, timeout)
            from ..cosim.live import Coordinator        # a switch fabric times every message of this run
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
            result.trace.counters = fabric.tracks()
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
        for rank, (conn, message) in enumerate(zip(conns, messages)):
            try:
                conn.send(message)
            except OSError:                            # BrokenPipeError, ConnectionResetError: it died
                self._raise_if_died(grace=1.0, first=rank)
                raise RankError(rank, "ConnectionClosed", "the rank closed its pipe to the launcher but did "
                                "not exit", "") from None
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
        if force and any(p.exitcode == 255 for p in self.procs):
            death.forkserver_exit(self._fs_pid, wait=1.0)   # a dead fork server: the next pool starts a fresh one
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


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


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

    Why a patch of a private function: multiprocessing documents no way to turn the re-import off.
    What the child re-runs is decided by ``spawn.get_preparation_data`` from ``__main__.__file__``
    and ``__main__.__spec__``; the alternatives read the same internals (hiding those attributes
    from the user's own ``__main__`` while the ranks start, or a ``__file__`` planted in the fork
    server for ``_fixup_main_from_path``'s early return), or change how ranks start (plain fork
    is unsafe in a threaded kernel and loses the preloaded fork server). The patch lasts only while
    the ranks start, and drops two keys the child treats as optional (without them it starts as
    under ``python -c``, where there is no main script to re-run).
    Guarded by tests/test_cluster.py::test_a_script_without_a_main_guard_is_not_rerun_in_the_ranks
    (a script and a ``python -m`` module with top-level ``netlab.run``, no guard) and the scripts
    of test_two_labs_on_one_machine_do_not_collide; should a Python release rename the function,
    they fail.
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


@atexit.register
def _close_all() -> None:
    for cluster in list(_live):
        cluster.close(force=True)
