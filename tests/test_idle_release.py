"""An idle shared pool gives its ranks back; a run in progress is never released."""
import sys
import threading
import time
from multiprocessing import resource_tracker

import pytest

import netlab
from netlab.runtime import shared
from conftest import pool_pids, wait_gone


def _rank(comm, seconds=0.0):
    time.sleep(seconds)
    return comm.rank


@pytest.fixture
def short_idle():
    before = shared.IDLE_S
    yield
    netlab.set_idle_timeout(before)


@pytest.mark.slow                       # waits out the idle timeout
def test_idle_pool_releases_its_processes(short_idle, monkeypatch):
    netlab.shutdown()                                               # a pool of exactly 2 ranks
    trims = []
    monkeypatch.setattr(shared, "trim_heap", lambda: trims.append(1))
    netlab.set_idle_timeout(1.0)
    assert netlab.run(_rank, ranks=2).values == [0, 1]
    pids = pool_pids()
    tracker = resource_tracker._resource_tracker._pid                # started with the fork server
    assert len(pids) == 2 and tracker is not None
    assert wait_gone(pids, seconds=60) == [] and shared._default is None
    for timer in threading.enumerate():                             # the release ends on its timer's thread:
        if timer.name == "netlab-idle-release":                     # waited for, not raced by a deadline
            timer.join(timeout=120)                                 # (5 s were once too few at load 26)
    assert trims == [1]                                             # the driver's heap too, after the ranks
    assert wait_gone([tracker], seconds=30) == []                   # and multiprocessing's resource tracker
    assert netlab.run(_rank, ranks=2).values == [0, 1]              # the next run starts a fresh pool
    assert set(pool_pids()).isdisjoint(pids)


@pytest.mark.slow
def test_busy_pool_is_not_released(short_idle):
    netlab.shutdown()
    netlab.set_idle_timeout(0.5)
    assert netlab.run(_rank, 2.0, ranks=2, timeout=30).values == [0, 1]   # outlives the idle time
    pids = pool_pids()
    assert len(pids) == 2                                              # still there right after the run
    netlab.set_idle_timeout(None)
    time.sleep(1.0)
    assert pool_pids() == pids                                        # disabled: kept


def test_bad_idle_timeout_names_the_parameter():
    with pytest.raises(ValueError, match="seconds"):
        netlab.set_idle_timeout(-1)
    with pytest.raises(ValueError, match="NETLAB_IDLE_S"):
        shared._idle_seconds("soon")


def test_a_kernel_trims_its_heap_once_after_its_last_cell(monkeypatch):
    """Registered on IPython's post_run_cell; cells in quick succession give one trim, after the last:
    each cell cancels the countdown the one before it started. The timers are stand-ins that record
    and fire when told, so no sleep races the countdown on a loaded machine."""
    import types
    trims, hooks, timers = [], [], []

    class Countdown:
        def __init__(self, interval, fn):
            self.interval, self.fn, self.started, self.cancelled = interval, fn, False, False
            timers.append(self)

        def start(self):
            self.started = True

        def cancel(self):
            self.cancelled = True

    shell = types.SimpleNamespace(events=types.SimpleNamespace(register=lambda event, fn: hooks.append((event, fn))))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(shared, "trim_heap", lambda: trims.append(1))
    monkeypatch.setattr(shared, "threading", types.SimpleNamespace(Timer=Countdown))
    monkeypatch.setattr(shared, "_trim_timer", None)
    assert shared.trim_when_kernel_idles() is True and shared.trim_when_kernel_idles() is False   # once per shell
    (event, after_cell), = hooks
    assert event == "post_run_cell"
    for _ in range(3):                                              # three cells, one after the other
        after_cell(None)
    assert [(t.started, t.cancelled) for t in timers] == [(True, True), (True, True), (True, False)]
    assert all(t.interval == shared.TRIM_AFTER_S for t in timers) and trims == []
    timers[-1].fn()                                                 # the last countdown runs out
    assert trims == [1]


def test_outside_a_kernel_nothing_is_registered(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert shared.trim_when_kernel_idles() is False
