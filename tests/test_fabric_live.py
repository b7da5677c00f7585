"""Real ranks on the congestion-aware fabric (netlab/cosim/live.py).

References: today's port model for the ideal transport with unlimited buffers (the same experiment
without ``congestion=`` must give exactly the same times); the closed form N x n / B for a lossless
(PFC) incast; the same program run twice, once beside CPU burners, for determinism.
"""
import multiprocessing as mp

import pytest
import torch

import netlab
from netlab import collectives
from netlab.collectives.bench import bench
from netlab.fabric import PFC
from netlab.fabric.congestion import Congestion
from netlab.dataparallel.step import measure_step


def _ring_then_tree(comm, n):
    x = torch.arange(n, dtype=torch.float32) + comm.rank
    collectives.allreduce(comm, x, algo="ring")
    with comm.compute(seconds=1e-4):
        pass
    y = x.clone()
    collectives.allreduce(comm, y, algo="tree")
    return comm.now(), float(x[1]), float(y[1])


def _incast(comm, block):
    """Every rank but 0 sends `block` bytes to rank 0 at once (a parameter server's push)."""
    if comm.rank == 0:
        bufs = [torch.empty(block // 4) for _ in range(comm.world_size - 1)]
        comm.wait(*[comm.irecv(b, src) for src, b in zip(range(1, comm.world_size), bufs)])
        assert all(float(b[0]) == src for src, b in zip(range(1, comm.world_size), bufs))
    else:
        comm.send(torch.full((block // 4,), float(comm.rank)), 0)
    return comm.now()


def test_ideal_transport_with_unlimited_buffers_gives_exactly_todays_times():
    plain = netlab.network("10Gbit/s", "5us")
    fabric = netlab.network("10Gbit/s", "5us", congestion=Congestion())
    a = netlab.run(_ring_then_tree, 10_000, ranks=5, network=plain)
    b = netlab.run(_ring_then_tree, 10_000, ranks=5, network=fabric)
    assert a.values == b.values and b.fabric == {"model": "ports"}
    assert [(e.start, e.end) for e in sorted(a.trace.events, key=lambda e: (e.rank, e.start, e.kind))] == \
           [(e.start, e.end) for e in sorted(b.trace.events, key=lambda e: (e.rank, e.start, e.kind))]
    # chapter 1's step and chapter 2's bench (which restarts the clock between sizes) through the context
    with netlab.congestion(Congestion()):
        step = measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128)
        rows = bench("allreduce", "halving_doubling", 6, [1 << 10, 1 << 20], network=netlab.network("25Gbit/s", "2us"))
    assert step.total_s == measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128).total_s
    plain_rows = bench("allreduce", "halving_doubling", 6, [1 << 10, 1 << 20], network=netlab.network("25Gbit/s", "2us"))
    assert [r["time_s"] for r in rows] == [r["time_s"] for r in plain_rows]


def test_lossless_incast_completes_in_n_blocks_over_the_bandwidth():
    """PFC never drops: 7 x 256 KiB into one 1 Gbit/s port take 7 x 256 KiB / B (plus one path latency)."""
    block, senders, bandwidth = 256 * 1024, 7, 1e9 / 8
    net = netlab.network("1Gbit/s", "20us", congestion=Congestion("dcqcn", buffer="256K", pfc=PFC(64 * 1024)))
    res = netlab.run(_incast, block, ranks=senders + 1, network=net)
    assert res.fabric["drops"] == 0 and res.fabric["pause_s"] > 0
    assert res.values[0] == pytest.approx(senders * block / bandwidth, rel=0.01)


def _burn(seconds):
    import time
    end = time.time() + seconds
    while time.time() < end:
        pass


def test_a_lossy_incast_is_deterministic_and_pays_for_its_drops():
    net = netlab.network("1Gbit/s", "20us", congestion=Congestion("reno", buffer="32K", rto_min="1ms"))
    first = netlab.run(_incast, 128 * 1024, ranks=9, network=net)
    burners = [mp.get_context("fork").Process(target=_burn, args=(30,)) for _ in range(2)]
    for p in burners:
        p.start()
    try:                                  # before settle() the event count differed in about half these runs
        again = [netlab.run(_incast, 128 * 1024, ranks=9, network=net) for _ in range(4)]
    finally:
        for p in burners:
            p.terminate()
    for second in again:
        assert first.values == second.values and first.fabric == second.fabric
    assert first.fabric["drops"] > 0 and first.fabric["retransmissions"] >= first.fabric["drops"]
    assert first.values[0] > 8 * 128 * 1024 / (1e9 / 8)                      # slower than the wire allows


def test_the_parameter_server_on_the_ideal_fabric_gives_exactly_todays_times():
    """run_ps waits for data outside comm.wait (Request.arrive): under Congestion() it is today's port model."""
    from netlab.ps import run_ps
    for mode in ("bsp", "asp"):
        kw = dict(workers=3, servers=2, steps=2, width=32, mode=mode)
        plain = run_ps(**kw)
        with netlab.congestion(Congestion()):
            ideal = run_ps(**kw)
        assert (ideal.step_s, ideal.comm_s) == (plain.step_s, plain.comm_s)
        assert ideal.setup["fabric"]["model"] == "ports"
        # every receive and compute phase at the same times (the fabric records only the sends a rank
        # waited for: the servers' answers are sent and never waited on)
        kept = lambda tr: sorted((e.rank, e.kind, e.peer, e.start, e.end)  # noqa: E731
                                 for e in tr.events if e.kind != "send")
        assert kept(plain.trace) == kept(ideal.trace) and len(kept(plain.trace)) > 20


def test_a_sync_parameter_server_push_collapses_on_a_200ms_rto_and_not_on_a_200us_one():
    """8 workers push 104 KB each into one server port with a 32 KB buffer (Reno): the incast of chapter 6."""
    from netlab.ps import run_ps
    kw = dict(workers=8, servers=1, steps=1, width=128, partition_bytes=0, bandwidth="1Gbit/s", latency="20us")
    ideal = run_ps(**kw)
    runs = {}
    for rto in (0.2, 200e-6):
        with netlab.congestion(Congestion("reno", buffer="32K", rto_min=rto)):
            runs[rto] = [run_ps(**kw) for _ in range(2 if rto == 0.2 else 1)]
    slow, again = runs[0.2]
    assert (slow.step_s, slow.comm_s, slow.setup["fabric"]) == (again.step_s, again.comm_s, again.setup["fabric"])
    assert slow.setup["fabric"]["timeouts"] > 0
    assert slow.comm_s > ideal.comm_s + 0.9 * 0.2
    fast = runs[200e-6][0]
    assert fast.comm_s < ideal.comm_s + 0.9 * 0.2 and fast.comm_s < slow.comm_s / 10
    assert fast.comm_s > ideal.comm_s                                 # drops still cost something


def test_a_multi_server_parameter_server_runs_on_a_lossy_fabric():
    """Two servers, several chunks per worker: each server blocks on data while workers wait on the other."""
    from netlab.ps import run_ps
    with netlab.congestion(Congestion("reno", buffer="16K", rto_min="1ms")):
        res = run_ps(workers=3, servers=2, steps=2, width=128, bandwidth="1Gbit/s", latency="20us")
    assert res.setup["fabric"]["drops"] > 0 and res.setup["chunks"] > 2
    assert res.step_s > run_ps(workers=3, servers=2, steps=2, width=128, bandwidth="1Gbit/s", latency="20us").step_s


@pytest.mark.parametrize("kwargs, parameter", [
    ({"transport": "tcp-vegas"}, "transport"), ({"buffer": "-1K"}, "buffer"), ({"rto_min": "0s"}, "rto_min"),
    ({"buffer": "100"}, "buffer"), ({"window": 10}, "window"), ({"background": 1.5}, "background"),
    ({"background": 0.3, "background_to": -1}, "background_to"), ({"background_size": 0}, "background_size")])
def test_bad_options_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=f"^{parameter}:"):
        Congestion(**kwargs)


@pytest.mark.parametrize("transport, rto_min", [("reno", 0.2), ("reno", 2e-4), ("cubic", 0.2)])
def test_real_ranks_give_the_model_scenarios_incast_exactly(transport, rto_min):
    """Chapter 6's model incast (netlab.fabric.experiments) and the same push on real gloo ranks: same round."""
    from netlab.fabric import experiments
    from netlab.fabric.experiments import Incast
    from netlab.cosim.experiments import incast_on_ranks
    model = experiments.incast(Incast(senders=8, block=256 * 1024, rounds=1, bandwidth=1e9 / 8,
                                      switch=Congestion(transport, buffer=32 * 1024, rto_min=rto_min)))
    spec = Congestion(transport, buffer=32 * 1024, rto_min=rto_min)
    # latency: 2 links x 25 us, as the model
    round_s, summary = incast_on_ranks(8, 256 * 1024, "1Gbit/s", "50us", congestion=spec)
    assert round_s == model.step_times[0]
    assert summary["timeouts"] == model.summary()["timeouts"]


def _counters(doc, pid):
    """{track: [(ts_us, value), ...]} of the Chrome counter events of process `pid`."""
    out = {}
    for ev in doc["traceEvents"]:
        if ev["ph"] == "C" and ev["pid"] == pid:
            (value,) = ev["args"].values()
            out.setdefault(ev["name"], []).append((ev["ts"], value))
    return out


def test_the_trace_of_a_fabric_run_carries_its_queues_drops_windows_and_timeouts(tmp_path):
    import json
    from netlab.observe.hta_export import load
    net = netlab.network("1Gbit/s", "20us", congestion=Congestion("reno", buffer="32K", rto_min="1ms"))
    res = netlab.run(_incast, 128 * 1024, ranks=9, network=net)
    path = res.trace.save(str(tmp_path / "incast.json"))
    doc = json.load(open(path))
    assert {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "fabric"}} in doc["traceEvents"]
    tracks = _counters(doc, 9)
    queue = [v for _, v in tracks["switch->rank0 queue"]]
    assert 32 * 1024 - 1500 < max(queue) <= 32 * 1024                  # a dropping drop-tail queue was full
    assert sum(v[-1][1] for k, v in tracks.items() if k.endswith(" drops")) == res.fabric["drops"] > 0
    assert sum(v[-1][1] for k, v in tracks.items() if k.endswith(" retransmissions")) == res.fabric["retransmissions"]
    assert sum(v[-1][1] for k, v in tracks.items() if k.endswith(" timeouts")) == res.fabric["timeouts"] > 0
    assert {f"window {r}->0" for r in range(1, 9)} <= set(tracks)
    assert all(ts <= res.values[0] * 1e6 + 1e-6 for ts, _ in tracks["switch->rank0 queue"])
    # the ranks' events are unchanged: loading the file gives back the run's trace
    back = load(path)
    key = lambda e: (e.rank, e.kind, e.peer, e.bytes)  # noqa: E731
    got, want = sorted(back.events, key=key), sorted(res.trace.events, key=key)
    assert [key(e) for e in got] == [key(e) for e in want]
    times = lambda events: [x for e in events for x in (e.start, e.end)]  # noqa: E731
    assert times(got) == pytest.approx(times(want), rel=1e-9, abs=1e-12)


def test_the_trace_of_a_lossless_run_carries_its_pauses(tmp_path):
    import json
    net = netlab.network("1Gbit/s", "20us", congestion=Congestion("dcqcn", buffer="256K", pfc=PFC(64 * 1024)))
    res = netlab.run(_incast, 256 * 1024, ranks=8, network=net)
    tracks = _counters(json.load(open(res.trace.save(str(tmp_path / "pfc.json")))), 8)
    paused = 0.0                                                      # the time some priority was paused
    for name, series in tracks.items():
        if name.endswith(" paused"):
            for (t0, n), (t1, _) in zip(series, series[1:] + [(res.values[0] * 1e6, 0)]):
                paused += (t1 - t0) / 1e6 if n else 0.0
    assert paused == pytest.approx(res.fabric["pause_s"], rel=1e-9) and paused > 0
    assert not any(name.endswith(" drops") for name in tracks)


def test_another_jobs_traffic_slows_a_push_the_same_way_every_time():
    """Seeded Poisson flows into the receiver's port: a slower round than alone, identical on a rerun."""
    alone = netlab.network("1Gbit/s", "20us", congestion=Congestion("reno", buffer="64K"))
    shared = netlab.network("1Gbit/s", "20us", congestion=Congestion("reno", buffer="64K", background=0.5))
    quiet = netlab.run(_incast, 256 * 1024, ranks=3, network=alone)
    first, again = (netlab.run(_incast, 256 * 1024, ranks=3, network=shared) for _ in range(2))
    assert first.values == again.values and first.fabric == again.fabric
    assert first.values[0] > quiet.values[0] >= 2 * 256 * 1024 / (1e9 / 8)


@pytest.mark.parametrize("kwargs, parameter", [({"transports": ("vegas",)}, "transports"), ({"steps": 1}, "steps"),
                                               ({"buffer": "-1K"}, "buffer"), ({"background": 2}, "background")])
def test_step_jitter_names_a_bad_parameter(kwargs, parameter):
    from netlab.cosim.experiments import step_jitter
    with pytest.raises(ValueError, match=f"^{parameter}:"):
        step_jitter(**kwargs)
