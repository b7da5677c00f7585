"""Virtual time is exact and deterministic; without a network the wall clock records the same events."""
import subprocess
import sys

import pytest
import torch

import netlab
from netlab import collectives
from netlab.dataparallel.step import measure_step

ALPHA, BW = 5e-6, 1.25e9                     # 5 us, 10 Gbit/s
NET = netlab.network("10Gbit/s", "5us")


def ping_pong(comm, nbytes):
    t = torch.zeros(nbytes // 4)
    if comm.rank == 0:
        comm.send(t, 1)
        comm.recv(t, 1)
    elif comm.rank == 1:
        comm.recv(t, 0)
        comm.send(t, 0)
    return comm.now()


@pytest.mark.parametrize("nbytes", [4, 4096, 1 << 20, 64 << 20])
def test_ping_pong_takes_exactly_two_alpha_plus_n_over_b(nbytes):
    res = netlab.run(ping_pong, nbytes, ranks=2, network=NET)
    assert res.values[0] == pytest.approx(2 * (ALPHA + nbytes / BW), rel=1e-12)


def incast(comm, nbytes):
    t = torch.zeros(nbytes // 4)
    if comm.rank == 0:
        for src in range(1, comm.world_size):
            comm.recv(t, src)
    else:
        comm.send(t, 0)
    return comm.now()


@pytest.mark.parametrize("k", [1, 3, 7])
def test_k_senders_into_one_receiver_share_its_port(k):
    n = 1 << 20
    res = netlab.run(incast, n, ranks=k + 1, network=NET)
    assert res.values[0] == pytest.approx(k * (ALPHA + n / BW), rel=1e-12)    # not n/B: k*n/B
    assert res.values[0] >= k * n / BW


def fan_out(comm, nbytes):
    t = torch.zeros(nbytes // 4)
    if comm.rank == 0:
        reqs = [comm.isend(t, dst) for dst in range(1, comm.world_size)]   # all posted at t=0
        comm.wait(*reqs)
    else:
        comm.recv(t, 0)
    return comm.now()


def test_a_sender_posting_k_messages_serializes_them_on_its_port():
    n = 1 << 20
    res = netlab.run(fan_out, n, ranks=4, network=NET)
    arrivals = sorted(res.values[1:])
    assert arrivals == pytest.approx([(i + 1) * (ALPHA + n / BW) for i in range(3)], rel=1e-12)


def test_full_duplex_exchange_costs_one_message_time():
    def exchange(comm, n):
        t_out, t_in = torch.zeros(n // 4), torch.zeros(n // 4)
        comm.sendrecv(t_out, 1 - comm.rank, t_in, 1 - comm.rank)
        return comm.now()
    n = 1 << 20
    assert netlab.run(exchange, n, ranks=2, network=NET).values == [pytest.approx(ALPHA + n / BW, rel=1e-12)] * 2


def test_size_only_messages_time_exactly_like_real_payloads():
    def ring(comm, count, real):
        x = torch.ones(count) if real else None
        collectives.allreduce(comm, x, algo="ring", count=count)
        return comm.now()
    count = 3 * 1000 + 1
    real = netlab.run(ring, count, True, ranks=5, network=NET).values
    sizes = netlab.run(ring, count, False, ranks=5, network=NET).values
    assert real == sizes


def test_compute_advances_the_clock_by_the_model_not_the_wall():
    def work(comm):
        with comm.compute(flops=96e9 * 0.5 * 0.25):          # a quarter second on cpu-core at 50 %
            torch.randn(200, 200) @ torch.randn(200, 200)
        comm.compute_for(seconds=0.001)
        return comm.now()
    res = netlab.run(work, ranks=1, network=NET, device=netlab.device("cpu-core", 0.5))
    assert res.values[0] == pytest.approx(0.251, rel=1e-12)


def test_same_step_time_on_every_run_with_8_ranks_on_2_cores_idle_or_loaded():
    idle = [measure_step(ranks=8, width=256).total_s for _ in range(2)]
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        loaded = measure_step(ranks=8, width=256).total_s
    finally:
        for b in burners:
            b.kill()
            b.wait()
    netlab.shutdown()                                     # a fresh pool: same answer again
    fresh = measure_step(ranks=8, width=256).total_s
    assert idle[0] == idle[1] == loaded == fresh


def test_wall_clock_without_a_network_records_the_same_events():
    def step(comm):
        t = torch.zeros(1000)
        with comm.compute():
            sum(range(10000))
        comm.sendrecv(t, (comm.rank + 1) % 2, torch.zeros(1000), (comm.rank + 1) % 2)
        return comm.now()
    res = netlab.run(step, ranks=2)
    assert not res.trace.virtual
    kinds = sorted(e.kind for e in res.trace.of(0))
    assert kinds == ["compute", "recv", "send"]
    for e in res.trace.events:
        assert 0 <= e.start <= e.end <= res.trace.clocks[e.rank]


def test_mismatched_sizes_give_a_clear_error():
    def mismatch(comm):
        if comm.rank == 0:
            comm.send(torch.zeros(10), 1)
        else:
            comm.recv(torch.zeros(12), 0)
    with pytest.raises(netlab.RankError, match="expected 48 bytes but rank 0 sent 40 bytes"):
        netlab.run(mismatch, ranks=2, network=NET)


def _exchange(comm, n, dtype):
    # both directions at once, every dtype the lab sends: payloads at and past PACK_BYTES
    mine = (torch.arange(n) * (comm.rank + 1)).to(dtype)
    theirs = torch.empty(n, dtype=dtype)
    comm.sendrecv(mine, 1 - comm.rank, theirs, 1 - comm.rank)
    return theirs, comm.now()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool, torch.float64])
def test_packed_and_separate_headers_deliver_the_same_bytes_at_the_same_times(dtype):
    from netlab.runtime.comm import PACK_BYTES
    size = torch.empty(0, dtype=dtype).element_size()
    for n in (1, PACK_BYTES // size, PACK_BYTES // size + 1):         # packed, packed at the limit, separate
        res = netlab.run(_exchange, n, dtype, ranks=2, network=NET)
        for rank, (theirs, clock) in enumerate(res.values):
            assert torch.equal(theirs, (torch.arange(n) * (2 - rank)).to(dtype))
            assert clock == pytest.approx(ALPHA + n * size / BW, rel=1e-12)
