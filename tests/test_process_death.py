"""Whatever process of a run is killed -- a rank or the fork server that starts the ranks -- at pool
start-up, mid-run or between runs, the run raises RankDied naming it and its signal, never a bare
EOFError / BrokenPipeError / ConnectionResetError, and no process of the pool outlives the error.

Each case kills with SIGKILL from outside, as the OOM killer does; what the error says is checked
against what was done (which process, which signal), and the next run must work.
"""
import os
import signal
import threading
import time

import psutil
import pytest

import netlab
from netlab.runtime import death, shared
from conftest import pool_pids, wait_gone


pytestmark = pytest.mark.slow             # each case restarts the fork server (torch imported again)


def _rank(comm, seconds=0.0):
    time.sleep(seconds)
    return comm.rank


def _fresh_forkserver():
    """No pool and no fork server: the next run starts both."""
    netlab.shutdown()
    from multiprocessing import forkserver
    forkserver._forkserver._stop()
    assert death.forkserver_pid() is None


def _children(pid):
    try:
        return [p.pid for p in psutil.Process(pid).children()]
    except psutil.NoSuchProcess:
        return []


def _kill_when(condition, what, delay=0.0):
    """A thread that SIGKILLs what(condition's value) as soon as condition() gives one; [pid killed]."""
    killed = []

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = condition()
            if found:
                time.sleep(delay)
                pid = what(found)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.005)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed


def _no_bare_pipe_errors(exc):
    for link in (exc, exc.__cause__, exc.__context__):
        assert not isinstance(link, (EOFError, BrokenPipeError, ConnectionResetError)), repr(link)


def _assert_fork_server_named(exc, pid):
    assert exc.process == "fork server" and exc.pid == pid and exc.rank is None
    assert exc.exitcode == -signal.SIGKILL
    assert str(exc).startswith(f"the fork server (pid {pid}) that starts this notebook's ranks died: "
                               f"it was killed by SIGKILL"), str(exc)
    _no_bare_pipe_errors(exc)


def test_fork_server_killed_while_the_pool_starts():
    _fresh_forkserver()
    # while it imports torch for the ranks: the launcher waits for its first rank's pid
    thread, killed = _kill_when(death.forkserver_pid, lambda pid: pid, delay=0.3)
    with pytest.raises(netlab.RankDied) as info:
        netlab.run(_rank, ranks=4)
    thread.join()
    _assert_fork_server_named(info.value, killed[0])
    assert "while rank 0 was being started" in str(info.value)
    assert wait_gone(killed) == [] and shared._default is None
    assert netlab.run(_rank, ranks=4).values == [0, 1, 2, 3]
    assert death.forkserver_pid() != killed[0]


def test_a_rank_killed_while_the_pool_starts():
    netlab.shutdown()                                # no pool; the fork server, if one runs, stays
    # the first rank, as soon as the fork server has forked it (the other five are still starting: none
    # can report ready before all six have joined the gloo group). A fork server already up forks them
    # as one being started does once torch is in; starting one would only add its torch import.
    thread, killed = _kill_when(lambda: (death.forkserver_pid() and _children(death.forkserver_pid())),
                                lambda ranks: ranks[0])
    with pytest.raises(netlab.RankDied) as info:
        netlab.run(_rank, ranks=6)
    thread.join()
    assert info.value.process == "rank" and info.value.rank == 0 and info.value.exitcode == -signal.SIGKILL
    assert str(info.value).startswith("rank 0 died: it was killed by SIGKILL"), str(info.value)
    _no_bare_pipe_errors(info.value)
    fs = death.forkserver_pid()
    assert wait_gone(killed) == [] and _children(fs) == []        # the other five were stopped
    assert netlab.run(_rank, ranks=6).values == list(range(6))


@pytest.mark.parametrize("victim", ["fork server", "rank"])
def test_killed_mid_run(victim):
    netlab.shutdown()                                # a pool of exactly 3 ranks
    netlab.run(_rank, ranks=3)
    ranks, fs = pool_pids(), death.forkserver_pid()
    pid = fs if victim == "fork server" else ranks[2]
    threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(netlab.RankDied) as info:
        netlab.run(_rank, 20.0, ranks=3, timeout=60)
    if victim == "fork server":
        _assert_fork_server_named(info.value, fs)
        assert "ranks 0, 1, 2 still ran and were stopped" in str(info.value)   # they did: only fs was killed
    else:
        assert (info.value.rank, info.value.exitcode) == (2, -signal.SIGKILL)
        assert str(info.value).startswith("rank 2 died: it was killed by SIGKILL")
    assert wait_gone([*ranks, pid]) == []
    assert netlab.run(_rank, ranks=3).values == [0, 1, 2]


@pytest.mark.parametrize("victim", ["fork server", "rank"])
def test_killed_between_runs(victim):
    netlab.run(_rank, ranks=2)                       # the fork server is up
    with netlab.Cluster(3) as pool:
        assert pool.run(_rank).values == [0, 1, 2]
        fs = death.forkserver_pid()
        pid = fs if victim == "fork server" else pool.pids[1]
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        with pytest.raises(netlab.RankDied) as info:
            pool.run(_rank)
        if victim == "fork server":
            _assert_fork_server_named(info.value, fs)
        else:
            assert str(info.value).startswith("rank 1 died: it was killed by SIGKILL")
        assert wait_gone([*pool.pids, pid]) == []
    # the shared pool lost its fork server too (or nothing): its next run starts afresh without a word
    assert netlab.run(_rank, ranks=2).values == [0, 1]
