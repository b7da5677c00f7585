"""Asynchronous parameter servers (ASP, SSP) on the packet fabric: pushes applied as they arrive.

References: a hand-worked arrival order (two workers whose compute times differ by a known factor,
so their pushes land in an order that follows from the factor alone) replayed through a few lines
of ASP bookkeeping; the fabric's own delivery times and timeouts in the run's trace; the SSP bound
read off the records (no push of step j + 1 before every worker has pushed step j - s); the same
program run twice for determinism.
"""
import numpy as np
import pytest
import torch

import netlab
from netlab.fabric.congestion import Congestion
from netlab.ps import run_ps
from netlab.ps.experiment import assemble

INCAST = dict(workers=4, servers=1, steps=3, width=128, partition_bytes=0, bandwidth="1Gbit/s", latency="20us")


def _asp_records(order):
    """ASP by hand: each push is applied as it is taken, and its worker reads the version right after it."""
    version, read, out = 0, {}, []
    for w, step in order:
        out.append((w, step, 0, version - read.get(w, 0)))
        version += 1
        read[w] = version
    return out


def _pushes(res, server_rank):
    """{(worker rank, step): (start, delivered)} of every push to `server_rank`, from the trace."""
    sends = sorted((e for e in res.trace.events if e.kind == "send" and e.peer == server_rank),
                   key=lambda e: (e.rank, e.start))
    out, step = {}, {}
    for e in sends:
        k = step.get(e.rank, 0)
        out[(e.rank, k)] = (e.start, e.end)
        step[e.rank] = k + 1
    return out


@pytest.mark.slow
def test_asp_on_an_ideal_fabric_applies_pushes_in_the_order_they_arrive():
    """Worker 1 computes 2.5x longer than worker 0: push k of worker w lands near slow_w x C x (k + 1)."""
    steps, slow = 4, {0: 1.0, 1: 2.5}
    kw = dict(workers=2, servers=1, steps=steps, width=32, partition_bytes=0, mode="asp", stragglers=1,
              straggle="fixed", slowdown=2.5, efficiency=0.01)
    with netlab.congestion(Congestion("ideal", buffer="16M")):
        res = run_ps(**kw)
    assert res.setup["fabric"]["model"] == "fabric" and res.setup["fabric"]["drops"] == 0
    # the hand model holds when a push-and-answer round trip, summed over every step, stays under the
    # smallest gap between two pushes of that model (half a fast step here)
    compute = min(e.end - e.start for e in res.trace.events if e.kind == "compute" and e.rank == 0)
    rounds = max(c for w in res.workers for c in w["comm_s"])
    assert steps * rounds < 0.5 * compute
    order = sorted(((w, k) for w in slow for k in range(steps)), key=lambda p: (slow[p[0]] * (p[1] + 1), p[0]))
    assert order[:4] == [(0, 0), (0, 1), (1, 0), (0, 2)]             # worked by hand: 1C, 2C, 2.5C, 3C
    assert res.states[0].records == _asp_records(order)
    # and the server took them in the order the fabric delivered them
    landed = _pushes(res, 2)
    assert [(w, k) for w, k, _, _ in res.states[0].records] == sorted(landed, key=lambda p: landed[p][1])


@pytest.mark.slow
def test_asp_through_a_dropping_reno_port_applies_a_timed_out_push_after_later_ones():
    """4 workers push 104 KB each into a 32 KB Reno port (RTOmin 200 ms): one push waits out a timeout."""
    with netlab.congestion(Congestion("reno", buffer="32K", rto_min=0.2)):
        first, again = (run_ps(mode="asp", **INCAST) for _ in range(2))
    with netlab.congestion(Congestion("reno")):                      # the same transport, no buffer limit
        calm = run_ps(mode="asp", **INCAST)
    # deterministic: the same times, order, staleness and final weights on a rerun
    assert (first.step_s, first.comm_s, first.setup["fabric"]) == (again.step_s, again.comm_s, again.setup["fabric"])
    assert first.states[0].records == again.states[0].records
    assert np.array_equal(assemble(first), assemble(again))
    assert first.setup["fabric"]["timeouts"] > 0 and calm.setup["fabric"]["timeouts"] == 0
    records = [(w, k) for w, k, _, _ in first.states[0].records]
    pushes = _pushes(first, 4)
    late = [p for p, (start, end) in pushes.items() if end - start > 0.2]
    assert late and len(late) <= first.setup["fabric"]["timeouts"]
    for w, k in late:
        start = pushes[(w, k)][0]
        overtaken = [p for p in records[:records.index((w, k))] if pushes[p][0] > start]
        assert overtaken, f"worker {w}'s step-{k} push waited out a timeout yet nothing that left later overtook it"
        # it read version 0 (step 0) so its staleness is every update applied before it
        if k == 0:
            assert first.states[0].records[records.index((w, k))][3] == records.index((w, k))
    # applied in delivery order, ties by worker
    assert records == sorted(pushes, key=lambda p: (pushes[p][1], p[0]))
    assert first.staleness != calm.staleness
    assert max(first.staleness) > max(calm.staleness)


def _ssp_bound_holds(records, staleness):
    """No push of step j + 1 is applied before every worker's push of step j - staleness."""
    seen = set()
    workers = {w for w, *_ in records}
    for w, k, *_ in records:
        if k >= staleness + 1:
            assert all((u, k - 1 - staleness) in seen for u in workers), (w, k)
        seen.add((w, k))


@pytest.mark.slow
def test_ssp_on_a_dropping_fabric_keeps_its_bound_and_repeats_exactly():
    with netlab.congestion(Congestion("reno", buffer="32K", rto_min=0.2)):
        first, again = (run_ps(mode="ssp", staleness=1, **INCAST) for _ in range(2))
    assert first.setup["fabric"]["timeouts"] > 0
    assert first.states[0].records == again.states[0].records and first.step_s == again.step_s
    assert np.array_equal(assemble(first), assemble(again))
    assert first.max_gap <= 1
    _ssp_bound_holds(first.states[0].records, 1)
    # a timed-out push holds everyone: no worker finishes 3 steps before RTOmin has passed
    assert first.step_s * 3 > 0.2


@pytest.mark.slow
def test_asp_and_ssp_with_two_servers_complete_on_a_lossy_fabric():
    """Several chunks per worker, two servers, each taking pushes as they land."""
    with netlab.congestion(Congestion("reno", buffer="16K", rto_min="1ms")):
        asp = run_ps(workers=3, servers=2, steps=3, width=128, mode="asp", bandwidth="1Gbit/s", latency="20us")
        ssp = run_ps(workers=3, servers=2, steps=3, width=128, mode="ssp", staleness=0,
                     bandwidth="1Gbit/s", latency="20us")
    assert asp.setup["fabric"]["drops"] > 0 and asp.setup["chunks"] > 2
    for res in (asp, ssp):
        assert sum(res.staleness.values()) == 3 * 3 * res.setup["chunks"]    # every push applied once
    for state in ssp.states:
        _ssp_bound_holds(state.records, 0)


def _first_on_ports(comm):
    x = torch.zeros(1)
    if comm.rank == 0:
        comm.wait_first(comm.irecv(x, 1))
    else:
        comm.send(x, 0)


def test_waiting_for_the_first_arrival_needs_a_packet_fabric():
    with pytest.raises(netlab.RankError, match="requests: the first of several messages"):
        netlab.run(_first_on_ports, ranks=2, network=netlab.network("1Gbit/s", "5us"))


def test_bad_settings_on_a_fabric_still_name_the_parameter():
    with netlab.congestion(Congestion("reno", buffer="32K")):
        with pytest.raises(ValueError, match="^staleness:"):
            run_ps(workers=2, steps=2, width=32, mode="ssp", staleness=-1)
        with pytest.raises(ValueError, match="^mode:"):
            run_ps(workers=2, steps=2, width=32, mode="hogwild")
