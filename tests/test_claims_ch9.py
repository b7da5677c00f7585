"""Chapter 9's claims (tests/claims.py), each run at the chapter's CI sizes and checked with bounds from the
closed forms the chapter prints beside its numbers: c x block / B for c flows on a link, block / B at line
rate, N x block / B for a port that never idles, the bytes left over the links left after a failure,
7/8 of the NIC with one of eight planes down, the framed emulation of a shaped link."""
import functools
from dataclasses import replace
import pytest

import netlab
from netlab.fabric.failure import Failure
from claims import claim
from netlab.fabric import PFC, ethernet
from netlab.linuxnet import linux
from netlab.fabric.congestion import Congestion
from netlab.fabric.experiments import headroom

KB = 1024
GBIT = 1e9 / 8
BLOCK = 256 * KB                                       # the chapter's CI block


@functools.cache                                       # two claims read the same two runs (deterministic)
def _steps():
    return {m: ethernet.ring_step(None, BLOCK,
                                  switch=replace(ethernet.RING, topology="fattree:4", transport="nscc", multipath=m))
            for m in ("ecmp", "spray")}


@claim("ch9.ecmp-collision-doubles-the-step")
def test_ecmp_puts_two_flows_on_a_link_and_takes_about_twice_sprayings_time():
    s = _steps()
    assert s["ecmp"].info["ecmp_collisions"] == 2
    assert 1.6 <= s["ecmp"].time_s / s["spray"].time_s <= 2.2


@claim("ch9.spraying-near-line-rate")
def test_spraying_loads_links_evenly_and_ends_within_a_few_round_trips_of_block_over_b():
    s = _steps()
    spray, ecmp = s["spray"], s["ecmp"]
    assert spray.time_s <= BLOCK / GBIT + 3 * spray.flows[0].base_rtt
    loads, hashed = list(spray.path_bytes().values()), list(ecmp.path_bytes().values())
    assert max(loads) <= 1.2 * sum(loads) / len(loads) and min(hashed) == 0 and max(hashed) >= 2 * BLOCK


@pytest.mark.slow
@claim("ch9.real-ranks-spray-beats-ecmp")
def test_on_real_ranks_spraying_reaches_a_higher_busbw():
    def ring(comm, n):
        import torch
        from netlab import collectives
        x = torch.ones(n // 4)
        collectives.allreduce(comm, x, algo="ring")
        return comm.now()
    t = {}
    for m in ("ecmp", "spray"):
        spec = Congestion("nscc", topology="spineleaf:2:2:1", placement="shuffled", multipath=m, seed=1)
        t[m] = max(netlab.run(ring, BLOCK, ranks=8, network=netlab.network("1Gbit/s", "20us", congestion=spec)).values)
    assert t["spray"] < t["ecmp"]


@claim("ch9.reno-resends-under-spraying")
def test_reno_resends_packets_the_receiver_had_and_is_slower_than_nscc():
    runs = {tr: ethernet.ring_step(None, BLOCK,
                                   switch=replace(ethernet.RING, topology="fattree:4", transport=tr, multipath="spray", window=64 * KB)) for tr in ("reno", "nscc")}
    r, u = runs["reno"].summary(), runs["nscc"].summary()
    assert r["drops"] == 0 and r["retransmissions"] > 0 and r["duplicates"] == r["retransmissions"]
    assert r["fast_retransmits"] > 0                      # each one halves Reno's window
    assert u["retransmissions"] == 0 and runs["reno"].time_s > runs["nscc"].time_s


@functools.cache                                       # two claims read the same five incasts (deterministic)
def _incasts():
    n, block = 16, 256 * KB
    setups = {"reno": dict(transport="reno"),
              "pfc": dict(transport="ideal", buffer=64 * KB, pfc=PFC(64 * KB - headroom(GBIT))),
              "nscc": dict(transport="nscc"), "trim": dict(transport="nscc", trim=True), "rccc": dict(transport="rccc")}
    return {k: ethernet.incast(n, block,
                               switch=replace(ethernet.INCAST, **{"buffer": 32 * KB, "rto_min": 0.2, **kw})) for k, kw in setups.items()}


@claim("ch9.trimming-ends-near-n-block-over-b")
def test_trimming_ends_within_a_few_round_trips_of_n_block_over_b_where_drop_tail_waits_out_rtomin():
    r = _incasts()
    ideal = r["trim"].ideal_s
    assert ideal <= r["trim"].time_s <= ideal + 10 * r["trim"].flows[0].base_rtt
    assert r["trim"].summary()["timeouts"] == 0 and r["trim"].summary()["pause_s"] == 0
    assert r["reno"].time_s > ideal + 0.2 and r["nscc"].time_s > ideal + 0.2
    assert r["pfc"].summary()["pause_s"] > 0 and max(r["pfc"].port.q_bytes) > 32 * KB


@claim("ch9.credits-keep-the-queue-near-empty")
def test_receiver_credits_keep_the_port_within_a_few_packets_and_lose_nothing():
    r = _incasts()["rccc"]
    s = r.summary()
    assert max(r.port.q_bytes) <= 4 * 1500 and s["drops"] == s["trims"] == 0


@claim("ch9.reps-leaves-a-dead-link-in-round-trips")
def test_reps_leaves_the_dead_link_in_round_trips_and_ecmp_waits_for_routing():
    at, reroute = 2e-3, 10e-3
    f = {m: ethernet.failover(8, 2 * 1024 * KB,
                              switch=replace(ethernet.FAILOVER, multipath=m, failure=Failure("leaf0->spine0", at, reroute))) for m in ("ecmp", "spray", "reps")}
    rtt = f["reps"].flows[0].base_rtt
    squeezed = at + (4 * 2 * 1024 * KB - at * 4 * GBIT) / (3 * GBIT)
    assert f["reps"].info["last_sent_onto_it_s"] <= 3 * rtt
    assert squeezed <= f["reps"].time_s <= 1.05 * squeezed
    assert f["ecmp"].time_s > 2 * f["reps"].time_s
    assert reroute - rtt <= f["spray"].info["last_sent_onto_it_s"] <= reroute


@claim("ch9.planes-lose-one-eighth")
def test_planes_match_one_link_keep_seven_eighths_and_hashing_gets_an_eighth():
    step = 2 * 1024 * KB
    single = ethernet.planes_step(8, step, switch=replace(ethernet.PLANES, planes=1))
    healthy = ethernet.planes_step(8, step, switch=replace(ethernet.PLANES, planes=8))
    down = ethernet.planes_step(8, step, switch=replace(ethernet.PLANES, planes=8), failed="link")
    cut = ethernet.planes_step(8, step, switch=replace(ethernet.PLANES, planes=1), failed="link", time_limit=0.05)
    hashed = ethernet.planes_step(8, step, switch=replace(ethernet.PLANES, multipath="ecmp", planes=8))
    assert healthy.time_s == pytest.approx(single.time_s, rel=0.03)
    assert healthy.time_s / down.time_s == pytest.approx(7 / 8, rel=0.03)
    assert not cut.complete and hashed.ideal_s / hashed.time_s <= 1 / 8


OK, WHY = linux.available()


@pytest.mark.slow
@pytest.mark.skipif(not OK, reason=WHY or "real Linux network unavailable")
@claim("ch9.framing-matches-a-shaped-link")
def test_with_framing_the_emulator_equals_a_real_tbf_shaped_link_within_one_percent():
    from netlab.linuxnet import linux_ring
    rate = "20Mbit/s"
    room = linux_ring.headroom(rate)
    if room < 4:
        pytest.skip(f"this machine moves only {room:.1f} x {rate} through veth and gloo now: the CPU, not the "
                    f"shaped link, would set the time")
    # A busy CPU only ever adds time to a shaped link's transfer, so the best of the repetitions converges on the
    # link's own time from above: the repetitions of every measurement are pooled, and a few more are taken while
    # the best is still more than the chapter's margin over the emulation. A time below the framed emulation
    # (by more than the margin) is the emulator's error, whatever the load. A best still above it after 20
    # repetitions is checked against the machine: if its headroom has fallen below 4 x the link since the start,
    # the CPU, not the link, set the time (CI once saw three 5-repetition measurements in a row miss the margin).
    margin = {"gloo_s": 0.01, "ring_s": 0.015}   # gloo pipelines; netlab's ring waits for each step's data
    rows = []
    for _ in range(4):
        rows.append(linux_ring.measure(ranks=4, sizes=["2M"], bandwidth=rate, reps=5)[0])
        framed = rows[0]["emulated_framed_s"]
        best = {k: min(r[k] for r in rows) for k in margin}      # each row's time is already its repetitions' best
        if all(best[k] <= (1 + m) * framed for k, m in margin.items()):
            break
    else:
        now = linux_ring.headroom(rate)
        if now < 4:
            pytest.skip(f"the machine's headroom fell to {now:.1f} x {rate} while measuring: the CPU set the time")
    for k, m in margin.items():
        assert best[k] >= (1 - m) * framed, f"{k}: {best[k]:.4f} s, {best[k] / framed - 1:+.2%} of the framed emulation"
    row = dict(rows[0], **best)
    off = ", ".join(f"{k} {best[k] / framed - 1:+.2%}" for k in margin)
    for k, m in margin.items():
        assert best[k] <= (1 + m) * framed, f"best of {5 * len(rows)} over the framed emulation: {off}"
    for measured in ("ring_s", "gloo_s"):
        assert 1.03 * row["emulated_s"] < row[measured] < 1.10 * row["emulated_s"], row   # "about 7 % short"
