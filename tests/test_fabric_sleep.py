"""DCQCN's sleeping timers change the cost of a run, never its result: the reference is the same
fabric with every timer firing an event on the heap, run by the plain event loop (stop checked at
every 256th event)."""
import heapq
import math

import pytest

from netlab.fabric import ECN, Congestion, Incast, Victim, incast, victim
from netlab.fabric.engine import Fabric
from netlab.fabric.rdma import DCQCN


def _as_events(self, which, t):
    """The plain event chain: a timer that finds its sender idle is scheduled anyway."""
    if which == "alpha":
        self.fabric.schedule(t, self._alpha_timer, None)
    else:
        self.fabric.schedule(t, self._increase_timer, self._gen)


def _plain_run(self, until=math.inf, stop=None, max_events=None):
    """The event loop without sleeping timers (the runs here set no event limit)."""
    assert max_events is None
    heap, n = self._heap, 0
    while heap and heap[0][0] <= until:
        t, _, fn, arg = heapq.heappop(heap)
        self.now = t
        fn(arg)
        n += 1
        if stop is not None and (n & 255) == 0 and stop():
            break
    else:
        if until != math.inf:
            self.now = max(self.now, until)
    self.events += n
    return self.now


def observed(run):
    flows = [(f.name, f.done_at, f.drops, f.sender.timeouts, f.sender.retransmissions, f.sender.alpha,
              f.sender.rc, f.sender.timer_stage, tuple(f.sender.w_t), tuple(f.sender.w)) for f in run.flows]
    ports = [(p.name, p.drops, p.marks, p.pauses, p.paused_seconds(), tuple(p.q_t), tuple(p.q_bytes))
             for p in run.engine.ports.values()]
    return run.step_times.tolist(), flows, ports, run.engine.now


RUNS = {
    # lossy RoCE: drops, 200 ms timeouts, the timers sleep through them; three rounds end on stop()
    "lossy incast": lambda: incast(Incast(senders=8, block=64 * 1024, rounds=3, bandwidth=1e9 / 8,
                                          switch=Congestion("dcqcn", buffer=16 * 1024, ecn=ECN(5_000, 200_000, 0.01)))),
    # with another job's DCQCN flows still running when the last round ends
    "incast + background": lambda: incast(Incast(senders=4, block=64 * 1024, rounds=2, bandwidth=1e9 / 8,
                                                 switch=Congestion("dcqcn", buffer=16 * 1024, ecn=ECN(5_000, 200_000, 0.01), rto_min=1e-3, seed=3, background=0.3))),
    # runs to a fixed time with flows that never finish
    "victim, no PFC": lambda: victim(pfc=False, config=Victim(incast_senders=6, duration=3e-3)),
}


@pytest.mark.parametrize("name", RUNS)
def test_sleeping_timers_give_the_same_run_as_an_event_per_firing(name, monkeypatch):
    slept = RUNS[name]()
    with monkeypatch.context() as m:
        m.setattr(DCQCN, "sleep", _as_events)
        m.setattr(Fabric, "run", _plain_run)
        plain = RUNS[name]()
    assert plain.engine.ghosts == 0
    assert observed(slept) == observed(plain)
    assert slept.engine.events + slept.engine.ghosts == plain.engine.events


def test_a_lossy_dcqcn_round_sleeps_most_of_its_timer_firings():
    run = RUNS["lossy incast"]()
    assert run.summary()["timeouts"] > 0
    assert run.engine.ghosts > 5 * run.engine.events
