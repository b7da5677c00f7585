"""Real ranks on the congestion-aware fabric (netlab/fabric/live.py).

References: today's port model for the ideal transport with unlimited buffers (the same experiment
without ``congestion=`` must give exactly the same times); the closed form N x n / B for a lossless
(PFC) incast; the same program run twice, once beside CPU burners, for determinism.
"""
import multiprocessing as mp

import pytest
import torch

import netlab
from netlab import collectives
from netlab.bench import bench
from netlab.fabric import PFC
from netlab.fabric.live import Congestion
from netlab.step import measure_step


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
        rows = bench("allreduce", "halving_doubling", 6, [1 << 10, 1 << 20], netlab.network("25Gbit/s", "2us"))
    assert step.total_s == measure_step(ranks=4, bandwidth="1Gbit/s", latency="5us", width=128).total_s
    plain_rows = bench("allreduce", "halving_doubling", 6, [1 << 10, 1 << 20], netlab.network("25Gbit/s", "2us"))
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


def test_the_parameter_server_is_refused_with_a_clear_error():
    with netlab.congestion(Congestion("reno", buffer="64K")):
        with pytest.raises(netlab.RankError, match="congestion fabric cannot time"):
            from netlab.ps import run_ps
            run_ps(workers=2, servers=1, steps=1)


@pytest.mark.parametrize("kwargs, parameter", [
    ({"transport": "tcp-vegas"}, "transport"), ({"buffer": "-1K"}, "buffer"), ({"rto_min": "0s"}, "rto_min"),
    ({"buffer": "100"}, "buffer"), ({"window": 10}, "window")])
def test_bad_options_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=f"^{parameter}:"):
        Congestion(**kwargs)


@pytest.mark.parametrize("transport, rto_min", [("reno", 0.2), ("reno", 2e-4), ("cubic", 0.2)])
def test_real_ranks_give_the_model_scenarios_incast_exactly(transport, rto_min):
    """Chapter 6's model incast (netlab.fabric.scenarios) and the same push on real gloo ranks: same round."""
    from netlab.fabric import scenarios
    from netlab.fabric.live import incast_on_ranks
    model = scenarios.incast(senders=8, block=256 * 1024, bandwidth=1e9 / 8, buffer=32 * 1024, transport=transport,
                             rto_min=rto_min, rounds=1)
    spec = Congestion(transport, buffer=32 * 1024, rto_min=rto_min)
    round_s, summary = incast_on_ranks(8, 256 * 1024, "1Gbit/s", "50us", spec)   # 2 links x 25 us, as the model
    assert round_s == model.rounds[0]
    assert summary["timeouts"] == model.summary()["timeouts"]
