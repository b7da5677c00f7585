"""Chapter 6's claims, each checked by running the chapter's experiment at its CI sizes (tests/claims.py).

Bounds come from the model (a closed form, the driver's own formula) or are stated as seed-independent
(checked over several seeds where the chapter runs one), never fitted to one run.
"""

import numpy as np
import pytest

from claims import claim
from netlab.fabric import ECN, PFC, Congestion, Incast, incast, jitter, long_flows, rates, theory, victim
from netlab.fabric.fluid import dcqcn_fluid, fixed_point
from netlab.fabric.experiments import headroom
from netlab.fabric.switch import MTU, pfc_headroom

GBIT = 1e9 / 8
KB = 1024


@claim("ch6.incast-collapse")
def test_sixteen_reno_senders_collapse_with_200ms_and_recover_with_200us():
    slow, fast = (incast(Incast(senders=16, block=256 * KB, rounds=2, bandwidth=GBIT,
                                switch=Congestion("reno", buffer=32 * KB, rto_min=rto))).summary()["goodput_Bps"] / GBIT
                  for rto in (0.2, 200e-6))
    assert slow < 0.1 and fast > 0.85


@claim("ch6.incast-round-waits")
def test_a_few_flows_finish_in_milliseconds_and_the_round_waits_out_timeouts():
    one = incast(Incast(senders=16, block=256 * KB, bandwidth=GBIT,
                        switch=Congestion("reno", buffer=32 * KB, rto_min=0.2)))
    took = [f.done_at - f.start for f in one.flows]
    quick = [t for t in took if t < 0.02]                 # within a few milliseconds (lossless: 2.1 ms each)
    assert 1 <= len(quick) < 16 // 2                     # a few, not most
    assert all(t < 0.02 or t > 0.2 for t in took)       # the rest waited out RTOmin at least once
    assert one.step_times[0] == pytest.approx(max(took)) and max(took) > 0.2    # as long as the unluckiest flow


def _mathis_ratio(p, seconds, seed):
    run = long_flows(1, 10 * GBIT, switch=Congestion("reno", seed=seed), duration=seconds, loss=p)
    flow = run.flows[0]
    return rates(flow, 0.01, seconds, 1)[1][0] / theory.mathis_throughput(MTU, flow.base_rtt, p), flow.sender


@pytest.mark.slow
@claim("ch6.mathis-holds")
def test_reno_is_within_a_quarter_of_mathis_at_low_loss_for_every_seed():
    for p, seconds in ((1e-3, 0.12), (3e-3, 0.08)):          # the chapter's CI sizes
        for seed in range(6):
            ratio, sender = _mathis_ratio(p, seconds, seed)
            assert sender.timeouts == 0 and abs(ratio - 1) <= 0.25, (p, seed, ratio)


@pytest.mark.slow
@claim("ch6.mathis-high-loss")
def test_reno_falls_below_mathis_at_one_percent_loss_and_timeouts_make_it_far_below():
    timed_out = []
    for seed in range(6):
        ratio, sender = _mathis_ratio(1e-2, 0.5, seed)
        assert ratio < 1, (seed, ratio)
        if sender.timeouts:
            timed_out.append(ratio)
    assert timed_out and max(timed_out) < 0.7               # a 200 ms timeout in a 0.5 s run costs that much


def _dctcp(k_packets, buffer=None, duration=0.012):
    return long_flows(2, 10 * GBIT,
                      switch=Congestion("dctcp", buffer=buffer, ecn=ECN.dctcp(k_packets * MTU)), duration=duration)


@claim("ch6.dctcp-band")
def test_dctcp_holds_the_analysed_band_at_full_throughput_while_reno_fills_the_buffer():
    ref = theory.dctcp_sawtooth(2, 10 * GBIT, 100e-6, 65 * MTU)
    run = _dctcp(65, buffer=600_000)
    t, q = run.queue()
    steady = q[t > 0.005] / MTU
    util = sum(rates(f, 0.005, 0.012, 1)[1][0] for f in run.flows) / (10 * GBIT)
    assert ref["q_min"] - 3 <= steady.min() and steady.max() <= ref["q_max"] + 3 and util >= 0.99
    reno = long_flows(2, 10 * GBIT, switch=Congestion("reno", buffer=600_000), duration=0.012)
    assert max(reno.port.q_bytes) >= 600_000 - MTU and reno.port.drops > 0
    assert sum(rates(f, 0.005, 0.012, 1)[1][0] for f in reno.flows) / (10 * GBIT) >= 0.99     # "the same throughput"


@claim("ch6.dctcp-period")
def test_dctcps_period_is_a_over_n_rtts_counting_the_queue_not_base_rtts():
    ref = theory.dctcp_sawtooth(2, 10 * GBIT, 100e-6, 65 * MTU)
    run = _dctcp(65, buffer=600_000)
    sender, base = run.flows[0].sender, run.flows[0].base_rtt
    cuts = np.array([c[0] for c in sender.cuts if c[0] > 0.005])
    period = np.diff(cuts).mean()
    t, q = run.queue()
    held = np.diff(np.append(t[t > 0.005], 0.012))
    waited = (q[t > 0.005] * held).sum() / held.sum() / (10 * GBIT)
    assert abs(period / (base + waited) / ref["period_rtts"] - 1) <= 0.15
    assert period / base > 1.5 * ref["period_rtts"]         # "nearly twice" in base RTTs


@claim("ch6.dctcp-k-guideline")
def test_k_below_c_rtt_over_7_empties_the_queue_and_loses_throughput():
    ref = theory.dctcp_sawtooth(2, 10 * GBIT, 100e-6, 65 * MTU)
    assert 5 < ref["k_min"] < 65
    out = {}
    for k in (5, 65):
        run = _dctcp(k)
        t, q = run.queue()
        out[k] = (q[t > 0.005].min(), sum(rates(f, 0.005, 0.012, 1)[1][0] for f in run.flows) / (10 * GBIT))
    assert out[5][0] == 0 and out[65][0] > 0 and out[5][1] < out[65][1]


@claim("ch6.tcp-cpu-cost")
def test_moving_bytes_through_kernel_tcp_costs_both_ends_cpu_mostly_in_the_receivers_kernel():
    from netlab.linuxnet.cpu_cost import tcp_cpu_cost
    cost = tcp_cpu_cost(1024 * 2**20)                 # the chapter's size: enough CPU time to split by ticks
    assert cost["sender"]["cpu_s"] > 0 and cost["receiver"]["cpu_s"] > 0
    for end in ("sender", "receiver"):                                      # "most of each end's time"
        assert cost[end]["sys_s"] > 0.5 * cost[end]["cpu_s"], (end, cost[end])
    assert cost["receiver"]["sys_s"] > 0.7 * cost["receiver"]["cpu_s"]


@claim("ch6.pfc-lossless-round")
def test_a_pfc_incast_takes_n_d_over_b_without_a_drop():
    s = incast(Incast(senders=16, block=256 * KB, bandwidth=GBIT,
                      switch=Congestion("ideal", buffer=64 * KB, pfc=PFC(64 * KB - headroom(GBIT))))).summary()
    want = theory.lossless_round(16, 256 * KB, GBIT)
    assert s["drops"] == 0 and abs(s["completion_s"]["p50"] - want) <= 0.01 * want


def mlx5_xoff(speed_mbps: int, cable_m: int, mtu: int = MTU) -> int:
    """The independent reference: Linux's mlx5 driver, drivers/net/ethernet/mellanox/mlx5/core/en/port_buffer.c,
    calculate_xoff(), written out in its integer arithmetic (speed in Mb/s, at least SPEED_40000; cable in m):
        speed = max_t(u32, speed, SPEED_40000);
        xoff = (301 + 216 * priv->dcbx.cable_len / 100) * speed / 1000 + 272 * mtu / 100;
    The result is the bytes the driver reserves above Xoff (a buffer's size minus this is its Xoff)."""
    speed = max(speed_mbps, 40_000)
    return (301 + 216 * cable_m // 100) * speed // 1000 + 272 * mtu // 100


FIBRE_S_PER_M = 5e-9          # propagation in cable, about 2/3 of light's speed


@claim("ch6.pfc-headroom-mlx5")
def test_netlab_headroom_is_below_mlx5s_at_every_speed_and_cable_length():
    assert mlx5_xoff(100_000, 3) == 34_780                                     # the chapter's figure
    assert round(pfc_headroom(100e9 / 8, 3 * FIBRE_S_PER_M)) == 28_591
    for gbit in (10, 25, 40, 100, 200, 400):
        for metres in (1, 3, 7, 30, 100):
            ours, driver = pfc_headroom(gbit * 1e9 / 8, metres * FIBRE_S_PER_M), mlx5_xoff(gbit * 1000, metres)
            assert 0.3 * driver < ours < driver, (gbit, metres, ours, driver)
        # the driver's margin on each term: per metre of cable (2.16 B per Gbit/s against the round trip's
        # 1.25), the reaction (301 B per Gbit/s against 802.3's allowance), and its MTUs (2.72 against 2)
        per_m = (pfc_headroom(gbit * 1e9 / 8, 101 * FIBRE_S_PER_M) - pfc_headroom(gbit * 1e9 / 8, FIBRE_S_PER_M)) / 100
        assert per_m == pytest.approx(1.25 * gbit) and per_m < 2.16 * max(gbit, 40)
        response = pfc_headroom(gbit * 1e9 / 8, 0.0) - 2 * MTU          # the upstream's reaction, bytes
        assert response < 301 * max(gbit, 40)                            # the driver's 301 B per Gbit/s


def _fluid_queue(flows, delay, dt=2e-6):
    q, _ = dcqcn_fluid(flows, delay, duration=0.06, dt=dt).window(0.05)
    return q


@claim("ch6.dcqcn-fixed-point")
def test_the_settled_dcqcn_queue_grows_with_n_below_the_approximate_fixed_point():
    q10, q2 = _fluid_queue(10, 4e-6), dcqcn_fluid(2, 4e-6, duration=0.06, dt=2e-6,
                                                   start_rates=[40e9 / 8, 4e9 / 8]).window(0.05)[0]
    for q, n in ((q10, 10), (q2, 2)):
        assert np.ptp(q) < 5e3                                                  # settled
        assert 0.7 * fixed_point(n)["queue_bytes"] < q.mean() < fixed_point(n)["queue_bytes"]
    assert 100e3 < q10.mean() < 140e3 and 15e3 < q2.mean() < 25e3 and q10.mean() > 4 * q2.mean()


@claim("ch6.dcqcn-stability")
@pytest.mark.parametrize("dt", [2e-6, 1e-6])                  # the chapter's CI and full integration steps
def test_ten_flows_oscillate_at_85us_where_two_flows_and_4us_do_not(dt):
    assert np.ptp(_fluid_queue(10, 85e-6, dt)) > 50e3
    assert np.ptp(_fluid_queue(2, 85e-6, dt)) < 5e3 and np.ptp(_fluid_queue(10, 4e-6, dt)) < 5e3


@claim("ch6.victim")
def test_pfc_makes_f1_a_victim_and_without_pfc_the_incast_is_dropped():
    on, off = victim(pfc=True), victim(pfc=False)
    during = {name: rates(run.flows[0], 0.001, 0.003, 1)[1][0] * 8 / 1e9 for name, run in (("on", on), ("off", off))}
    after = rates(on.flows[0], 0.003, on.engine.now, 1)[1][0] * 8 / 1e9
    assert during["on"] < 5 and after < 5 and on.engine.ports["S1->S2"].paused_seconds() > 0
    assert during["off"] > 9.5 and off.engine.ports["S2->R2"].drops > 0 and on.engine.ports["S2->R2"].drops == 0
    burst = on.flows[2:]
    assert len(burst) == 15 and sum(f.size for f in burst) / (10e9 / 8) == pytest.approx(0.015, rel=0.01)
    assert any(f.done_at is None for f in on.flows[2:]) and on.engine.now < 0.015


@claim("ch6.jitter-tail")
def test_the_mean_carries_renos_tail_the_median_hides_it_and_dcqcn_has_none():
    steps = jitter(("reno", "dctcp", "dcqcn"), config=Incast(senders=4, block=64 * KB, rounds=12,
                                                             switch=Congestion('reno', buffer=64 * 1024, background=0.3)))
    for name in ("reno", "dctcp"):
        r = steps[name]
        assert r["p99"] > 10 * r["p50"]
    assert steps["dcqcn"]["p99"] < 2 * steps["dcqcn"]["p50"]
    for seed in range(3):                                  # "Reno's mean is many times its median", any seed
        reno = steps["reno"] if seed == 0 else jitter(("reno",), config=Incast(senders=4, block=64 * KB, rounds=12,
                                                                               switch=Congestion('reno', buffer=64 * 1024, background=0.3, seed=seed)))["reno"]
        assert reno["mean"] > 5 * reno["p50"], (seed, reno)


@pytest.mark.slow
@claim("ch6.real-steps-tail")
def test_real_training_steps_show_the_same_tail():
    from netlab.cosim.experiments import step_jitter
    real = step_jitter(ranks=3, steps=12, width=64, buffer="32K", background=0.5, rto_min="200ms")
    assert all(r["p50"] < 1e-3 for r in real.values())
    for name in ("reno", "dctcp"):
        f = real[name]["fabric"]
        assert f["drops"] > 0 and f["timeouts"] > 0 and real[name]["max"] > 0.2
        assert real[name]["p99"] > 10 * real[name]["p50"]
    assert real["dcqcn"]["fabric"]["drops"] == 0 and real["dcqcn"]["max"] < 3 * real["dcqcn"]["p50"]
    assert real["ideal"]["max"] > max(real["reno"]["max"], real["dctcp"]["max"])


@pytest.mark.slow
@claim("ch6.real-ranks-equal-model")
def test_the_round_on_real_ranks_is_the_models_round():
    from netlab.fabric.congestion import Congestion
    from netlab.cosim.experiments import incast_on_ranks
    for rto in (0.2, 200e-6):
        real_s, _ = incast_on_ranks(8, 256 * KB, "1Gbit/s", "50us",
                                    congestion=Congestion("reno", buffer=32 * KB, rto_min=rto))
        assert real_s == incast(Incast(senders=8, block=256 * KB, rounds=1, bandwidth=GBIT,
                                       switch=Congestion("reno", buffer=32 * KB, rto_min=rto))).step_times[0]


@pytest.mark.slow
@claim("ch6.asp-staleness")
def test_how_stale_an_asynchronous_push_is_depends_on_the_network():
    import netlab
    from netlab.fabric.congestion import Congestion
    from netlab.ps import run_ps
    push = dict(workers=3, servers=1, steps=3, width=128, partition_bytes=0, mode="asp", bandwidth="1Gbit/s",
                latency="20us", eval_every=0)
    p, steps = push["workers"], push["steps"]
    fabrics = {"none": None, "reno": Congestion("reno", buffer=16 * KB, rto_min=0.2),
               "dcqcn": Congestion("dcqcn", buffer=16 * KB, pfc=PFC(8 * KB))}
    runs = {}
    for name, spec in fabrics.items():
        with netlab.congestion(spec):
            runs[name] = run_ps(**push)
    robin = {i: 1 for i in range(p - 1)} | {p - 1: p * steps - (p - 1)}      # round robin: p - 1 after the first round
    assert runs["none"].staleness == robin
    reno = runs["reno"]
    assert reno.setup["fabric"]["timeouts"] >= 1 and max(reno.staleness) == (p - 1) * steps   # after all others' pushes
    records = reno.states[0].records                                          # (worker, step, chunk, staleness)
    late = next(i for i, rec in enumerate(records) if rec[3] == (p - 1) * steps)
    assert all(i < late for i, rec in enumerate(records) if rec[0] != records[late][0])
    dcqcn = runs["dcqcn"].setup["fabric"]
    assert dcqcn["drops"] == 0 and dcqcn["pause_s"] > 0 and runs["dcqcn"].staleness != robin
