"""Chapter 9's mechanisms in the packet fabric, each against an independent reference.

References: chapter 6's one-switch incast (the multi-switch builder on a star must give it to the last
digit); chapter 5's ECMP routes and its flow simulator's max-min rates (``sim.maxmin.max_min_rates``);
closed forms counted by hand (1/k of a flow per path under round-robin spraying; N x block / B for a
port that never idles; a full port trims exactly what does not fit; a pull pacer grants one packet
per packet time); the REPS paper's claims (under 25 bytes of state, a failed path left within a few
round trips); and RFC 5681 (three duplicate ACKs start a retransmission, so reordering alone makes
Reno resend packets that were never lost).
"""
from dataclasses import replace

import numpy as np
import pytest

from netlab.fabric import ethernet as E
from netlab.fabric import Congestion, Incast
from netlab.fabric import incast as ch6_incast
from netlab.fabric import multipath as mp
from netlab.fabric.engine import Fabric, Flow
from netlab.fabric.failure import Failure
from netlab.fabric.multiswitch import SwitchedNetwork
from netlab.fabric.rccc import CreditPacer
from netlab.fabric.rud import UnorderedFlow
from netlab.fabric.switch import Packet
from netlab.fabric.trimming import HEADER, TRIM_PRIO, TrimmingPort
from netlab.net import fabrics, routing
from netlab.net.network import Link
from netlab.sim.maxmin import max_min_rates

KB = 1024
GBIT = 1e9 / 8


# ---- the builder -------------------------------------------------------------------------------------
def test_a_star_built_from_a_topology_is_chapter_6s_incast_to_the_last_digit():
    ch6 = ch6_incast(Incast(senders=16, block=256 * KB, bandwidth=GBIT,
                            switch=Congestion("reno", buffer=32 * KB, rto_min=0.2)))
    ours = E.incast(16, 256 * KB,
                    switch=replace(E.INCAST, topology="star", transport="reno", buffer=32 * KB, rto_min=0.2, ecn=None))
    assert ours.time_s == ch6.step_times[0]
    assert ours.summary()["drops"] == ch6.summary()["drops"] and ours.summary()["timeouts"] == ch6.summary()["timeouts"]


def test_every_shortest_path_is_found_and_ecmp_takes_chapter_5s_route():
    topo = fabrics.fat_tree(4, nic=Link(GBIT, 50e-6))
    net = SwitchedNetwork(Fabric(0), topo)
    a, b = int(topo.endpoints[0]), int(topo.endpoints[15])          # different pods: (k/2)^2 = 4 paths
    ids = net.link_ids(a, b)
    assert len(ids) == 4 and len({tuple(p) for p in ids}) == 4 and all(len(p) == 6 for p in ids)
    same_pod = net.link_ids(int(topo.endpoints[0]), int(topo.endpoints[2]))
    assert len(same_pod) == 2                                          # through either aggregation switch
    for seed in range(5):
        chosen = routing.route(topo, [a], [b], "ecmp", seed=seed).path(0)
        assert ids[net.ecmp_index(a, b, seed)] == chosen


def test_spraying_gives_each_of_k_equal_paths_one_kth_of_a_flow():
    result = E.ring_step(2, 400 * 1500, switch=replace(E.RING, topology="spineleaf:2:4:1", transport="nscc", multipath="spray", placement="ordered"))
    counts = result.flows[0].multipath.sent                          # 400 packets over 4 spines
    assert len(counts) == 4 and sum(counts) == 400 and max(counts) - min(counts) <= 1


def test_ecmp_collisions_and_spraying_against_the_flow_simulators_max_min_and_line_rate():
    block = 512 * KB
    ecmp = E.ring_step(None, block,
                       switch=replace(E.RING, topology="fattree:4", transport="nscc", multipath="ecmp", seed=0))
    spray = E.ring_step(None, block,
                        switch=replace(E.RING, topology="fattree:4", transport="nscc", multipath="spray", seed=0))
    topo = ecmp.network.topology
    pairs = E.ring_pairs(topo, topo.size, "shuffled", 0)
    r = routing.route(topo, topo.endpoints[[a for a, _ in pairs]], topo.endpoints[[b for _, b in pairs]], "ecmp", seed=0)
    flows = [[str(l) for l in r.path(f)] for f in range(len(pairs))]
    rates = max_min_rates(flows, {str(l): float(topo.capacity[l]) for l in np.unique(r.link)})
    flow_model = block / min(rates)                                  # the slowest flow's time, max-min fair
    assert ecmp.info["ecmp_collisions"] >= 2 and flow_model == pytest.approx(ecmp.info["ecmp_collisions"] * block / GBIT)
    rtt = ecmp.flows[0].base_rtt
    assert flow_model <= ecmp.time_s <= flow_model + 12 * rtt
    assert block / GBIT <= spray.time_s <= block / GBIT + 12 * rtt < 0.75 * ecmp.time_s


# ---- trimming ------------------------------------------------------------------------------------------
def _trim_setup(buffer_packets=2, arrivals=5):
    fab = Fabric(0, jitter=0.0)
    port = TrimmingPort(fab, "sw->rx", GBIT, 0.0, buffer=buffer_packets * 1500, switch=fab.switch("sw"))
    fab.ports[port.name] = port
    flow = UnorderedFlow(fab, "f", [port], arrivals * 1500, start=0.0)
    got = []
    flow.receive = got.append
    for seq in range(arrivals):
        port.enqueue(Packet(flow, seq, 1500, True, prio=0, sent_at=0.0))
    fab.run()
    return port, got


def test_a_full_port_trims_exactly_what_does_not_fit_and_sends_the_headers_first():
    port, got = _trim_setup(buffer_packets=2, arrivals=5)
    # packet 0 goes on the wire at once; 1 and 2 fill the 2-packet buffer; 3 and 4 are cut to headers
    assert port.trims == 2 and port.drops == 0
    trimmed = [p for p in got if p.trimmed]
    assert [p.seq for p in trimmed] == [3, 4] and all(p.size == HEADER and p.prio == TRIM_PRIO for p in trimmed)
    assert [p.seq for p in got] == [0, 3, 4, 1, 2]                   # the header queue is served first


def test_a_trimmed_incast_ends_near_n_block_over_b_with_no_timeout_where_drop_tail_waits_out_rtomin():
    n, block = 16, 256 * KB
    ideal = n * block / GBIT
    dropping = E.incast(n, block, switch=replace(E.INCAST, transport="reno", buffer=32 * KB, rto_min=0.2))
    trimmed = E.incast(n, block,
                       switch=replace(E.INCAST, transport="nscc", trim=True, buffer=32 * KB, rto_min=0.2))
    rtt = trimmed.flows[0].base_rtt
    s = trimmed.summary()
    assert s["timeouts"] == 0 and s["drops"] == 0 and s["trims"] > 0 and s["nacks"] == s["trims"]
    assert ideal <= trimmed.time_s <= ideal + 10 * rtt
    assert dropping.time_s > ideal + 0.2 and dropping.summary()["timeouts"] > 0


def test_receiver_credits_keep_the_incast_queue_within_a_few_packets():
    n, block = 16, 256 * KB
    r = E.incast(n, block, switch=replace(E.INCAST, transport="rccc", buffer=32 * KB, rto_min=0.2))
    s = r.summary()
    assert s["drops"] == 0 and s["trims"] == 0 and s["timeouts"] == 0
    assert max(r.port.q_bytes) <= 4 * 1500
    assert r.time_s <= n * block / GBIT + 3 * r.flows[0].base_rtt


def test_the_pull_pacer_grants_one_packet_of_credit_per_packet_time():
    fab = Fabric(0)
    pacer = CreditPacer(fab, GBIT)

    class Sender:
        finished = False
        flow = Flow(fab, "f", [fab.port("p", GBIT, 1e-6)], 10 * 1500, start=0.0)

        def on_credit(self, amount):
            pass
    s = Sender()
    pacer.ask((s, 10 * 1500))
    fab.run()
    assert pacer.granted == 10 * 1500
    assert np.allclose(np.diff(pacer.grant_t), 1500 / GBIT)


# ---- reordering ----------------------------------------------------------------------------------------
def test_under_spraying_reno_resends_packets_that_were_never_lost_and_a_reorder_tolerant_transport_does_not():
    reno = E.ring_step(None, 512 * KB,
                       switch=replace(E.RING, topology="fattree:4", transport="reno", multipath="spray", window=64 * KB))
    nscc = E.ring_step(None, 512 * KB,
                       switch=replace(E.RING, topology="fattree:4", transport="nscc", multipath="spray"))
    r, u = reno.summary(), nscc.summary()
    assert r["drops"] == 0 and r["retransmissions"] > 0 and r["fast_retransmits"] > 0
    assert r["duplicates"] == r["retransmissions"]                   # each resend reached a receiver that had it
    assert u["drops"] == 0 and u["retransmissions"] == 0 and u["duplicates"] == 0
    assert reno.time_s > nscc.time_s


def test_per_flow_ecmp_never_reorders():
    reno = E.ring_step(None, 512 * KB,
                       switch=replace(E.RING, topology="fattree:4", transport="reno", multipath="ecmp", window=64 * KB))
    assert reno.summary()["retransmissions"] == 0


# ---- failures ------------------------------------------------------------------------------------------
def test_reps_leaves_a_failed_link_within_a_few_round_trips_and_ecmp_hashes_onto_it_until_rerouted():
    reps = E.failover(8, 2 * 1024 * 1024,
                      switch=replace(E.FAILOVER, multipath="reps", failure=Failure("leaf0->spine0", 2e-3, 10e-3)))
    ecmp = E.failover(8, 2 * 1024 * 1024,
                      switch=replace(E.FAILOVER, multipath="ecmp", failure=Failure("leaf0->spine0", 2e-3, 10e-3)))
    rtt = reps.flows[0].base_rtt
    assert 0 < reps.info["lost_on_failed_link"] and reps.info["last_sent_onto_it_s"] < 5 * rtt
    assert 0 < ecmp.info["last_sent_onto_it_s"] <= 10e-3                # it kept hashing onto it, then routing moved it
    assert ecmp.time_s > 1.5 * reps.time_s
    # after the failure the other 3 spine links carry the rest: 2 ms at 4 links' rate, then 3
    total, done = 4 * 2 * 1024 * 1024, 2e-3 * 4 * GBIT
    squeezed = 2e-3 + (total - done) / (3 * GBIT)
    assert squeezed <= reps.time_s <= 1.05 * squeezed


def test_a_failed_link_loses_its_queue_and_everything_sent_to_it_afterwards():
    r = E.failover(8, 512 * KB,
                   switch=replace(E.FAILOVER, multipath="spray", failure=Failure("leaf0->spine0", 1e-3, None)))
    s = r.summary()
    assert s["lost_on_failed_links"] > 0 and s["lost_on_failed_links"] == r.info["lost_on_failed_link"]
    assert r.complete                                                # the transport resent what was lost


def test_a_failure_names_a_link_the_topology_has_and_a_time_within_the_run():
    with pytest.raises(ValueError, match="^failure: no link 'leaf0->spine9'"):
        E.failover(8, 64 * KB, switch=replace(E.FAILOVER, failure=Failure("leaf0->spine9", 2e-3, 10e-3)))
    with pytest.raises(ValueError, match="^failure: at 500 ms is after the run ended"):
        E.failover(8, 64 * KB, switch=replace(E.FAILOVER, failure=Failure("leaf0->spine0", 0.5, 10e-3)))
    with pytest.raises(ValueError, match="^failure: a link's label"):
        Failure("spine0")


# ---- planes ----------------------------------------------------------------------------------------------
def test_eight_planes_match_one_link_healthy_and_lose_one_eighth_with_a_plane_down():
    healthy = E.planes_step(8, 2 * 1024 * 1024, switch=replace(E.PLANES, multipath="reps", planes=8))
    single = E.planes_step(8, 2 * 1024 * 1024, switch=replace(E.PLANES, multipath="reps", planes=1))
    down = E.planes_step(8, 2 * 1024 * 1024, switch=replace(E.PLANES, multipath="reps", planes=8), failed="link")
    cut = E.planes_step(8, 2 * 1024 * 1024,
                        switch=replace(E.PLANES, multipath="reps", planes=1), failed="link", time_limit=0.05)
    hashed = E.planes_step(8, 2 * 1024 * 1024, switch=replace(E.PLANES, multipath="ecmp", planes=8))
    assert healthy.time_s == pytest.approx(single.time_s, rel=0.03)
    assert down.time_s == pytest.approx(healthy.time_s * 8 / 7, rel=0.03)
    assert not cut.complete                                          # one link: the host is cut off
    assert hashed.time_s > 6 * healthy.time_s             # a hashed flow stays on one plane


# ---- REPS ------------------------------------------------------------------------------------------------
class _Clock:
    now = 0.0


class _Port:
    failed, qbytes = False, 0


def test_reps_reuses_clean_entropies_oldest_first_and_never_marked_ones():
    reps = mp.REPS([[_Port()] for _ in range(8)], _Clock(), seed=1, freeze=False)
    reps.ev_of = {0: 3, 1: 5, 2: 6}
    reps.acked(0, False)
    reps.acked(1, True)                                              # marked: not recycled
    reps.acked(2, False)
    assert reps.buffer == [3, 6]
    assert reps.choose() == 3 and reps.choose() == 6                 # oldest first, each used once
    assert reps.buffer == [] and reps.explored == 0
    reps.choose()
    assert reps.explored == 1                                        # nothing left: explore


def test_reps_state_fits_in_25_bytes():
    reps = mp.REPS([[_Port()] for _ in range(16)], _Clock())
    assert reps.state_bytes() < 25


def test_two_runs_are_identical():
    a = E.ring_step(None, 128 * KB,
                    switch=replace(E.RING, topology="fattree:4", transport="nscc", multipath="reps", seed=3))
    b = E.ring_step(None, 128 * KB,
                    switch=replace(E.RING, topology="fattree:4", transport="nscc", multipath="reps", seed=3))
    assert a.time_s == b.time_s and [f.done_at for f in a.flows] == [f.done_at for f in b.flows]


def test_bad_combinations_are_refused_with_one_line_naming_the_parameter():
    cases = [(dict(transport="reno", trim=True), "trim"), (dict(transport="nscc", trim=True, buffer=None), "trim"),
             (dict(transport="nscc", multipath="hash"), "multipath"), (dict(transport="tcp"), "transport"),
             (dict(transport="ideal", credit_rate=0.5), "credit-rate"), (dict(transport="rccc", credit_rate=0), "credit-rate")]
    for kw, name in cases:
        with pytest.raises(ValueError) as e:
            E.incast(4, 64 * KB, switch=replace(E.INCAST, **kw))
        assert str(e.value).startswith(f"{name}:") and "\n" not in str(e.value)
    from netlab.fabric import PFC
    with pytest.raises(ValueError, match="^trim:"):
        E.incast(4, 64 * KB, switch=replace(E.INCAST, transport="nscc", trim=True, buffer=64 * KB, pfc=PFC(8000)))
