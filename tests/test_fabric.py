"""The packet fabric against published results and closed forms (chapter 6).

References (../shared/reference/congestion-observability.md section 6): Vasudevan et al. SIGCOMM'09
(incast collapse with RTOmin 200 ms, gone with 200 us), Chen et al. WREN'09 (one RTO per round
bounds goodput), DCTCP's sawtooth (SIGCOMM'10 section 3.3), DCQCN-validation's PFC victim flow.
"""
import numpy as np
import pytest

from netlab.fabric import ECN, PFC, Congestion, Incast, incast, long_flows, rates, victim
from netlab.fabric import theory
from netlab.fabric.experiments import headroom

GBIT = 1e9 / 8          # bytes/s
BLOCK = 256 * 1024


@pytest.mark.parametrize("senders", [8, 16])
def test_incast_collapses_tenfold_with_rto_min_200ms_and_not_with_200us(senders):
    buffer, window = 32 * 1024, 64 * 1024                                   # a shallow port, Linux's first window
    slow = incast(Incast(senders=senders, block=BLOCK, rounds=2, bandwidth=GBIT,
                         switch=Congestion("reno", buffer=buffer, rto_min=0.2, window=window))).summary()
    fast = incast(Incast(senders=senders, block=BLOCK, rounds=2, bandwidth=GBIT,
                         switch=Congestion("reno", buffer=buffer, rto_min=200e-6, window=window))).summary()
    assert senders * window > buffer and slow["timeouts"] >= 2             # every round waits out an RTO
    assert slow["goodput_Bps"] <= GBIT / 10                                 # collapse: 10x or more
    assert slow["completion_s"]["p50"] >= 0.2                                # a round lasts at least RTOmin
    # Chen et al.'s model with one RTO per round (the others overlap a little with the wait)
    assert slow["goodput_Bps"] <= 1.1 * theory.incast_goodput_one_timeout(senders, BLOCK, GBIT, 0.2)
    assert fast["goodput_Bps"] >= 0.85 * GBIT                               # near the link rate


def test_no_loss_at_line_rate_while_senders_x_window_fits_in_the_buffer():
    s = incast(Incast(senders=2, block=BLOCK, rounds=2, bandwidth=GBIT,
                      switch=Congestion("reno", buffer=128 * 1024, window=64 * 1024))).summary()
    assert s["drops"] == 0 and s["timeouts"] == 0
    assert s["goodput_Bps"] >= 0.95 * GBIT


@pytest.mark.parametrize("transport", ["reno", "ideal"])
def test_pfc_incast_is_lossless_and_takes_n_blocks_over_bandwidth(transport):
    buffer = 64 * 1024
    pfc = PFC(buffer - headroom(GBIT))
    run = incast(Incast(senders=16, block=BLOCK, rounds=1, bandwidth=GBIT,
                        switch=Congestion(transport, buffer=buffer, pfc=pfc)))
    s = run.summary()
    assert s["drops"] == 0 and s["timeouts"] == 0 and s["pause_s"] > 0
    want = theory.lossless_round(16, BLOCK, GBIT)
    assert abs(s["completion_s"]["p50"] - want) <= 0.01 * want


def _steady_queue(run, start):
    t, q = run.queue()
    grid = np.arange(start, run.engine.now, 5e-6)
    return grid, q[np.searchsorted(t, grid, side="right") - 1] / 1500   # packets, sampled every 5 us


def _utilization(run, start):
    return sum(rates(f, start, run.engine.now, 1)[1][0] for f in run.flows) / (10 * GBIT)


def test_dctcp_queue_oscillates_around_k_as_the_sawtooth_analysis_says():
    k = 65 * 1500
    run = long_flows(2, 10 * GBIT, switch=Congestion("dctcp", ecn=ECN.dctcp(k)), duration=0.02)
    ref = theory.dctcp_sawtooth(2, 10 * GBIT, 100e-6, k)                    # Q 54.8..67, period 6.1 RTTs
    grid, q = _steady_queue(run, 0.005)
    assert ref["q_min"] - 3 <= q.min() and q.max() <= ref["q_max"] + 3
    assert ref["q_min"] <= q.mean() <= ref["q_max"]
    spectrum = np.abs(np.fft.rfft(q - q.mean())) ** 2
    freq = np.fft.rfftfreq(len(q), 5e-6)
    spectrum[freq < 200] = 0
    period_rtts = 1 / freq[np.argmax(spectrum)] / run.flows[0].sender.srtt   # RTT with its queueing delay
    assert abs(period_rtts - ref["period_rtts"]) <= 0.3 * ref["period_rtts"]
    alpha = np.mean([f.sender.alphas[-20:] for f in run.flows])
    assert abs(alpha - ref["alpha"]) <= 0.3 * ref["alpha"]
    assert _utilization(run, 0.005) >= 0.99
    assert run.port.drops == 0


def test_dctcp_k_below_c_rtt_over_7_empties_the_queue_and_loses_throughput():
    ref = theory.dctcp_sawtooth(2, 10 * GBIT, 100e-6, 5 * 1500)
    assert 5 < ref["k_min"] and ref["q_min"] < 0
    low = long_flows(2, 10 * GBIT, switch=Congestion("dctcp", ecn=ECN.dctcp(5 * 1500)), duration=0.012)
    good = long_flows(2, 10 * GBIT, switch=Congestion("dctcp", ecn=ECN.dctcp(65 * 1500)), duration=0.012)
    assert _steady_queue(low, 0.004)[1].min() == 0 and _steady_queue(good, 0.004)[1].min() > 0
    assert _utilization(low, 0.004) < 0.999 <= _utilization(good, 0.004)


@pytest.mark.parametrize("transport", ["reno", "cubic"])
def test_loss_based_tcp_fills_the_buffer_where_dctcp_keeps_it_near_k(transport):
    buffer = 600_000
    lossy = long_flows(2, 10 * GBIT, switch=Congestion(transport, buffer=buffer), duration=0.01)
    dctcp = long_flows(2, 10 * GBIT,
                       switch=Congestion("dctcp", buffer=buffer, ecn=ECN.dctcp(65 * 1500)), duration=0.01)
    assert max(lossy.port.q_bytes) >= buffer - 1500 and lossy.port.drops > 0
    steady = _steady_queue(dctcp, 0.004)[1] * 1500                          # bytes, after slow start
    assert steady.max() <= 0.2 * buffer                                     # DCTCP: ~90 % less buffer


def test_pfc_victim_flow_loses_throughput_only_with_pfc():
    on, off = victim(pfc=True), victim(pfc=False)
    for run in (on, off):
        assert rates(run.flows[0], 0.0005, 0.001, 1)[1][0] >= 0.99 * 10 * GBIT     # F1 at line rate before
    during_on = rates(on.flows[0], 0.001, 0.003, 1)[1][0]
    during_off = rates(off.flows[0], 0.001, 0.003, 1)[1][0]
    assert during_on <= 0.5 * 10 * GBIT and on.engine.ports["S1->S2"].paused_seconds() > 0
    assert on.summary()["drops"] == 0
    assert during_off >= 0.95 * 10 * GBIT and off.engine.ports["S2->R2"].drops > 0


def test_a_run_is_deterministic():
    a = incast(Incast(senders=8, block=BLOCK, rounds=2, bandwidth=GBIT,
                      switch=Congestion("cubic", buffer=32 * 1024, rto_min=1e-3))).summary()
    b = incast(Incast(senders=8, block=BLOCK, rounds=2, bandwidth=GBIT,
                      switch=Congestion("cubic", buffer=32 * 1024, rto_min=1e-3))).summary()
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


@pytest.mark.parametrize("kwargs, name", [
    ({"buffer": -1}, "buffer"), ({"transport": "vegas"}, "transport"), ({"rto_min": 0}, "rto_min"),
    ({"senders": 0}, "senders"), ({"pfc": PFC(100_000)}, "xoff"), ({"pfc": PFC(60_000)}, "pfc"),
    ({"pfc": PFC(10_000, headroom=100)}, "pfc-headroom"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    switch = {"buffer": 64 * 1024, **{k: v for k, v in kwargs.items() if k != "senders"}}
    with pytest.raises(ValueError, match=f"^{name}:"):
        incast(Incast(senders=kwargs.get("senders", 4),
                      switch=Congestion(switch.pop("transport", "reno"), **switch)))


@pytest.mark.parametrize("kmin, kmax, pmax, name", [(10, 5, 1.0, "ecn-kmin"), (0, 5, 0.0, "ecn-pmax"),
                                                      (0, 5, 1.5, "ecn-pmax"), (-1, 5, 1.0, "ecn-kmin")])
def test_bad_ecn_names_the_parameter(kmin, kmax, pmax, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        ECN(kmin, kmax, pmax)
