"""Chapter 9's fabric under real ranks (``Congestion(topology=..., multipath=..., trim=..., planes=..., failure=...)``).

References: the packet model run alone (``fabric.ethernet``) for the same setup, which real ranks must
reproduce to the last digit (chapter 6 section 8's test, on the new transports and topologies); torch's
own sum for the all-reduce's values; chapter 1's step and chapter 3's parameter server run unchanged;
the same program twice for determinism.
"""
from dataclasses import replace
import pytest
import torch

import netlab
from netlab import collectives
from netlab.fabric import ethernet as E
from netlab.fabric.congestion import Congestion
from netlab.fabric.failure import Failure
from netlab.cosim.experiments import incast_on_ranks
from netlab.ps import run_ps
from netlab.dataparallel.step import measure_step

KB = 1024


@pytest.mark.parametrize("spec, model", [
    (dict(transport="nscc", trim=True), dict(transport="nscc", trim=True)),
    (dict(transport="rccc"), dict(transport="rccc")),
    (dict(transport="nscc", trim=True, topology="spineleaf:2:2:1", multipath="spray"),
     dict(transport="nscc", trim=True, topology="spineleaf:2:2:1", multipath="spray")),
])
def test_real_ranks_give_the_packet_models_incast_exactly(spec, model):
    real_s, seen = incast_on_ranks(7, 256 * KB, "1Gbit/s", "50us", congestion=Congestion(buffer=32 * KB, **spec))
    alone = E.incast(7, 256 * KB, switch=replace(E.INCAST, buffer=32 * KB, ecn=None, **model))
    assert real_s == alone.time_s
    assert seen["trims"] == alone.summary()["trims"] and seen["timeouts"] == alone.summary()["timeouts"] == 0


def _ring(comm, n):
    x = torch.arange(n, dtype=torch.float32) + comm.rank
    collectives.allreduce(comm, x, algo="ring")
    return comm.now(), float(x[0]), float(x[-1])


def test_a_ring_allreduce_on_a_spine_leaf_sums_right_and_spraying_beats_hashing():
    n, ranks = 256 * 1024, 8
    times = {}
    for scheme in ("ecmp", "spray"):
        spec = Congestion("nscc", topology="spineleaf:2:2:1", placement="shuffled", multipath=scheme, seed=1)
        res = netlab.run(_ring, n, ranks=ranks, network=netlab.network("1Gbit/s", "20us", congestion=spec))
        want = sum(range(ranks))
        assert all(v[1] == want and v[2] == ranks * (n - 1) + want for v in res.values)   # the sum, by hand
        times[scheme] = max(v[0] for v in res.values)
        assert res.fabric["duplicates"] == 0 and res.fabric["retransmissions"] == 0
    assert times["spray"] < 0.9 * times["ecmp"]


@pytest.mark.slow
def test_chapter_1s_step_and_chapter_3s_parameter_server_run_unchanged_on_the_new_fabric():
    spec = Congestion("rccc", topology="spineleaf:2:2:1", multipath="reps", buffer=64 * KB, trim=True)
    with netlab.congestion(spec):
        a = measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128)
        b = measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128)
        ps = run_ps(workers=3, servers=1, steps=2, width=64, bandwidth="1Gbit/s", latency="20us", eval_every=0)
    assert a.total_s == b.total_s > a.compute_s                     # deterministic, and the network costs time
    plain = measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128)
    assert a.comm_s >= plain.comm_s                                   # credits and hops never make it faster
    assert ps.step_s > 0 and ps.setup["fabric"]["model"] == "fabric"


def test_a_link_failure_on_real_ranks_is_survived_and_counted():
    spec = Congestion("nscc", topology="spineleaf:2:2:1", multipath="reps", trim=True, buffer=64 * KB,
                      rto_min=1e-3, failure=Failure("leaf0->spine0", at=1e-3, reroute=None))
    res = netlab.run(_ring, 512 * 1024, ranks=4, network=netlab.network("1Gbit/s", "20us", congestion=spec))
    assert all(v[1] == 6 for v in res.values)
    assert res.fabric["failure_happened"] and res.fabric["lost_on_failed_link"] > 0


def test_the_new_options_leave_todays_port_model_alone_and_are_checked():
    assert Congestion().ports_only and Congestion(multipath="spray").ports_only     # one switch: one path
    assert not Congestion("nscc").ports_only and not Congestion(topology="fattree:4").ports_only
    for kwargs, name in [(dict(topology="torus:4x4"), "topology"), (dict(placement="random"), "placement"),
                         (dict(failure=Failure("leaf0->spine0")), "failure"),
                         (dict(topology="fattree:4", background=0.3), "background"),
                         (dict(transport="reno", unscheduled=1500), "unscheduled"),
                         (dict(failure="leaf0->spine0", topology="fattree:4"), "failure")]:
        with pytest.raises(ValueError) as e:
            Congestion(**kwargs)
        assert str(e.value).startswith(f"{name}:"), (kwargs, str(e.value))
