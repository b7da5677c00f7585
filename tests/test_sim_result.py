"""Issue 28: two result types for a run, sharing their names. Every simulated model returns a
``net.result.SimResult`` (its shared fields, its model's detail read through); chapter 6's packet
experiments take their network from a ``Topology`` as chapter 9's do."""
import math

import numpy as np
import pytest

from netlab import sim
from netlab.fabric import Congestion, Incast, Victim, ethernet, incast, long_flows, victim
from netlab.fabric.fluid import dcqcn_fluid
from netlab.net import fabrics
from netlab.net.result import SimResult
from netlab.runtime.result import RunResult
from netlab.runtime.trace import Trace
from netlab.sim import ina

SHARED = ("model", "time_s", "step_times", "wall_s", "topology", "complete", "fabric", "detail")


def _runs():
    return {"flow": sim.simulate(fabrics.fat_tree(4), "allreduce", "ring", 1 << 20),
            "ina": ina.allreduce(fabrics.star(4), 1 << 20),
            "ch6 incast": incast(Incast(senders=4, block=64 * 1024, rounds=2)),
            "ch6 long flows": long_flows(2, duration=0.002),
            "ch6 victim": victim(pfc=True, config=Victim(incast_senders=3, duration=2e-3)),
            "ch9 incast": ethernet.incast(4, 64 * 1024),
            "fluid": dcqcn_fluid(2, 4e-6, 0.002)}


def test_every_simulated_model_returns_one_type_with_the_shared_fields():
    for name, r in _runs().items():
        assert type(r) is SimResult, name
        for field in SHARED:
            assert hasattr(r, field), (name, field)
        assert isinstance(r.step_times, np.ndarray) and r.step_times.dtype == float, name
        assert r.wall_s > 0 and r.time_s > 0 and r.complete, name
        assert isinstance(r.summary(), dict), name


def test_the_shared_fields_mean_the_same_in_every_model():
    runs = _runs()
    flow, six, nine, fluid = runs["flow"], runs["ch6 incast"], runs["ch9 incast"], runs["fluid"]
    assert flow.time_s == float(flow.step_times.sum()) and flow.fabric is None
    assert six.time_s == sum(six.step_times.tolist()) and len(six.step_times) == 2
    assert nine.time_s == nine.step_times[0] and nine.summary()["completion_s"]["max"] == nine.time_s
    assert runs["ch6 long flows"].time_s == pytest.approx(0.002) and runs["ch6 long flows"].step_times.size == 0
    assert fluid.time_s == pytest.approx(0.002) and fluid.topology is None and fluid.fabric is None
    for r in (six, nine, runs["ch6 victim"]):                     # the counters, as RunResult.fabric has them
        assert {"drops", "marks", "pause_s", "timeouts", "retransmissions"} <= set(r.fabric)
        assert all(r.summary()[k] == v for k, v in r.fabric.items())
    assert "trims" in nine.fabric and "trims" not in six.fabric    # chapter 9's own counters
    # the busiest link by its label in both the flow and the packet models
    assert flow.bottleneck == flow.topology.link_label(flow.bottleneck_link) == flow.summary()["bottleneck"]
    assert six.bottleneck == "tor->rx" and six.port is six.engine.ports["tor->rx"]
    # a queue over time: a port's on the packet fabric, the bottleneck's in the fluid model
    for r in (six, fluid):
        t, q = r.queue()
        assert t.shape == q.shape and (np.diff(t) >= 0).all()


def test_the_detail_reads_through_and_an_unknown_name_says_whose():
    r = sim.simulate(fabrics.star(4), "allreduce", "ring", 1 << 16)
    assert r.busbw_GBps == r.detail.busbw_GBps and r.detail.result is r
    with pytest.raises(AttributeError, match="flow SimResult has no attribute 'flows'.*FlowDetail"):
        r.flows
    with pytest.raises(ValueError, match="^model: "):
        SimResult(model="packets", time_s=0.0)


def test_a_run_on_real_ranks_shares_time_s_and_message_pattern():
    trace = Trace([], [1.5, 2.0], virtual=True)
    res = RunResult([None, None], trace, [(0, 0, 0, 0)] * 2, wall_s=0.1)
    assert res.time_s == 2.0 == trace.makespan and res.message_pattern() == []


def test_chapter6_networks_come_from_a_topology_with_the_chapters_port_names():
    run = incast(Incast(senders=3, block=16 * 1024, burst=8 * 1500))
    assert run.topology.name == "star" and run.topology.size == 5     # 3 senders, the other job's host, rx
    assert list(run.engine.ports) == ["h0.nic", "h1.nic", "h2.nic", "h3.nic", "tor->rx"]
    assert type(run.port).__name__ == "TokenBucketPort" and run.network.topology is run.topology
    assert [p.name for p in run.flows[0].path] == ["h0.nic", "tor->rx"]
    v = victim(pfc=False, config=Victim(incast_senders=2, duration=1e-3))
    assert v.topology.name == "dumbbell"
    assert list(v.engine.ports) == ["H1.nic", "H2.nic", "S1->S2", "S2->R1", "S2->R2", "H3.nic", "H4.nic"]
    assert v.engine.ports["S1->S2"].rate == Victim().trunk * Victim().bandwidth
    assert [p.name for p in v.flows[0].path] == ["H1.nic", "S1->S2", "S2->R1"]


def test_an_incomplete_packet_run_takes_inf():
    cut = incast(Incast(senders=8, switch=Congestion("reno", buffer=16 * 1024)), event_limit=300)
    assert not cut.complete and cut.time_s == math.inf and cut.step_times.size == 0
