"""The "predict, then measure" questions answered by the packet-level fabric: chapter 6's incast and
chapter 9's Ethernet for AI (spraying, reordering, trimming, failover, planes, framing;
``netlab.ui.questions`` says how they are built)."""
from __future__ import annotations

from dataclasses import replace

from ..predict import Numeric, Prediction


def ch6(rounds: int = 1, path=None) -> Prediction:
    def measure():
        from ...fabric import Congestion, Incast, incast
        gbit, kb = 1e9 / 8, 1024
        put = {rto: incast(Incast(senders=16, block=256 * kb, rounds=rounds, bandwidth=gbit,
                                  switch=Congestion("reno", buffer=32 * kb, rto_min=rto))).summary()
               for rto in (0.2, 200e-6)}
        slow, fast = (put[rto]["goodput_Bps"] / gbit for rto in (0.2, 200e-6))
        return {"value": slow, "fast_rto": fast, "timeouts": put[0.2]["timeouts"],
                "text": f"16 senders x 256 KB, 32 KB buffer, Reno: {slow:.1%} of the link with RTOmin 200 ms "
                        f"({put[0.2]['timeouts']} timeouts), {fast:.0%} with RTOmin 200 us"}
    return Prediction(
        "ch6-incast", "16 senders push 256 KB each through one 1 Gbit/s port with a 32 KB buffer (TCP Reno, "
        "RTOmin 200 ms): what fraction of the link do the rounds get?", measure, options=[
            ("about 90 %", "that is what an RTOmin of 200 us gets back; with 200 ms a round waits for its "
                           "timed-out senders"),
            ("about half", "a loss does not halve a round: a sender that cannot fast-retransmit waits a whole "
                           "timeout, 200 ms against the few milliseconds the data needs"),
            ("under 10 %", "the measurement says otherwise: compare the timeouts with the round's length",
             "Once the buffer's share per sender falls below about three packets (32 KB / 8 senders is under 3 "
             "packets of 1,500 B), a sender that loses packets gets fewer than three duplicate ACKs, cannot "
             "fast-retransmit, and waits out the retransmission timeout. A round lasts as long as its slowest "
             "sender, so one timeout of 200 ms turns a round of a few milliseconds into 200 ms: goodput falls "
             "by 10x or more, the TCP incast collapse Vasudevan et al. measured (SIGCOMM 2009: up to 90 %). An "
             "RTOmin of 200 us -- the fix they proposed -- brings goodput back near line rate without changing "
             "the buffer (measured above). Note what did not matter: bandwidth."),
        ], correct=lambda m: 2 if m["value"] < 0.1 else 1 if m["value"] < 0.7 else 0, path=path)


def ch9(path=None) -> Prediction:
    """Chapter 9, section 1: one ring all-reduce step with shuffled ranks on a fat-tree, ECMP against spraying."""
    def measure():
        from ...fabric import ethernet
        t = {m: ethernet.ring_step(None, 512 * 1024,
                                   switch=replace(ethernet.RING, topology="fattree:4", transport="nscc", multipath=m))
             for m in ("ecmp", "spray")}
        ratio = t["ecmp"].time_s / t["spray"].time_s
        return {"value": ratio, "collisions": t["ecmp"].info["ecmp_collisions"],
                "text": f"16 hosts, 512 KB each: ECMP {t['ecmp'].time_s * 1e3:.2f} ms, spraying "
                        f"{t['spray'].time_s * 1e3:.2f} ms (x{ratio:.2f}); the busiest link under ECMP carried "
                        f"{t['ecmp'].info['ecmp_collisions']} flows"}
    return Prediction(
        "ch9-ecmp-vs-spray", "One ring all-reduce step on a k=4 fat-tree (16 hosts, ranks in a shuffled order, "
        "512 KB per host, full bisection bandwidth): with per-flow ECMP, compared with per-packet spraying, the "
        "step takes...", measure, options=[
            ("about the same: the fabric has full bisection bandwidth", "full bisection means the links could "
             "carry every flow at line rate, not that a hash spreads them so: ECMP puts some flows on one link"),
            ("about twice as long", "the measurement says otherwise",
             "Each switch hashes a flow onto one of its equal next hops. With 16 flows and 4 core paths some link "
             "gets two flows while another gets none (a hash collision, chapter 5), and a ring step lasts as long "
             "as its slowest flow: at half the link's rate, twice the step. Spraying sends every flow's packets "
             "round robin over all its paths, so every link carries its share and the step runs near line rate."),
            ("longer with spraying: reordering costs", "reordering costs a transport that assumes order (section 2); "
             "the step here used NSCC, which does not care in which order packets arrive"),
        ], correct=lambda m: 1 if m["value"] >= 1.4 else 2 if m["value"] < 0.95 else 0, path=path)


def ch9_reorder(path=None) -> Prediction:
    """Chapter 9, section 2: Reno under spraying, nothing dropped: does it resend?"""
    def measure():
        from ...fabric import ethernet
        r = ethernet.ring_step(None, 512 * 1024, switch=replace(ethernet.RING, topology="fattree:4", transport="reno",
                                                                multipath="spray", window=64 * 1024))
        s = r.summary()
        packets = sum(f.npkts for f in r.flows)
        return {"value": s["retransmissions"], "drops": s["drops"], "packets": packets,
                "text": f"Reno under spraying: {s['retransmissions']} of {packets} packets resent, {s['drops']} dropped, "
                        f"{s['fast_retransmits']} fast retransmits"}
    return Prediction(
        "ch9-reordering", "The same step sprayed, with TCP Reno (a loss is three duplicate ACKs) and buffers deep "
        "enough that no packet is ever dropped: how many packets does Reno resend?", measure, options=[
            ("none: nothing was lost", "to Reno a packet that arrives late looks exactly like one that was lost: "
                                       "both leave a gap that duplicate ACKs report"),
            ("some: packets that overtake each other look like losses", "the measurement says otherwise",
             "Sprayed packets of one flow cross different queues and arrive out of order. Every packet that "
             "arrives beyond a gap makes the receiver repeat its cumulative ACK; three such duplicates and Reno "
             "decides the missing packet was lost (RFC 5681), resends it and halves its window, although the "
             "packet was only late. Nothing was dropped, so every one of these resends was spurious. NSCC over "
             "reliable unordered delivery takes packets in any order and resends only what is NACKed, timed out, "
             "or missing after more packets than could overtake it."),
            ("every packet, many times over", "a duplicate ACK only counts up to the next cumulative ACK; most "
             "packets arrive within the three-ACK threshold"),
        ], correct=lambda m: 0 if m["value"] == 0 else 1 if m["value"] < m["packets"] / 4 else 2, path=path)


def ch9_trim(path=None) -> Prediction:
    """Chapter 9, section 3: a shallow-buffer incast with trimming and NSCC."""
    def measure():
        from ...fabric import ethernet
        n, block = 16, 256 * 1024
        r = ethernet.incast(n, block,
                            switch=replace(ethernet.INCAST, transport="nscc", trim=True, buffer=32 * 1024, rto_min=0.2))
        s = r.summary()
        return {"value": r.time_s / r.ideal_s, "timeouts": s["timeouts"], "trims": s["trims"],
                "text": f"trimming + NSCC: {r.time_s * 1e3:.2f} ms (N x block / B = {r.ideal_s * 1e3:.2f} ms), "
                        f"{s['trims']} packets trimmed, {s['timeouts']} timeouts"}
    return Prediction(
        "ch9-trimming", "16 senders push 256 KB each into one 1 Gbit/s port with a 32 KB buffer and RTOmin 200 ms "
        "(chapter 6's collapse). With trimming and NSCC, the round takes about...", measure, options=[
            ("N x block / B (33.6 ms) and a little more", "the measurement says otherwise",
             "A switch that cannot queue a packet cuts it to its 64-byte header and sends the header ahead of "
             "the data. The receiver gets the header one queue later and answers with a NACK, the sender resends "
             "that one packet, and NSCC's QuickAdapt shrinks its window to what was delivered. No loss goes "
             "unnoticed, so no timer has to run out: the port is never idle, and the round ends within a few "
             "round trips of N x block / B. RTOmin no longer matters."),
            ("about 200 ms, like drop-tail", "drop-tail loses packets silently, so a sender that cannot see the "
             "loss waits out RTOmin; a trimmed packet's header reaches the receiver, which NACKs it at once"),
            ("less than N x block / B: trimmed packets are smaller", "the trimmed payloads must still be sent, "
             "later: the port carries every byte once at least"),
        ], correct=lambda m: 0 if m["value"] < 1.5 and m["timeouts"] == 0 else 1 if m["value"] > 3 else 2, path=path)


def ch9_failover(path=None) -> Prediction:
    """Chapter 9, section 4: a link failure during a step, ECMP with a 10 ms reroute against REPS."""
    def measure():
        from ...fabric import ethernet
        t = {m: ethernet.failover(8, 2 * 1024 * 1024,
                                  switch=replace(ethernet.FAILOVER, multipath=m)) for m in ("ecmp", "reps")}
        ratio = t["ecmp"].time_s / t["reps"].time_s
        return {"value": ratio, "text": f"ECMP {t['ecmp'].time_s * 1e3:.1f} ms, REPS {t['reps'].time_s * 1e3:.1f} "
                                        f"ms; REPS sent its last packet onto the dead link "
                                        f"{t['reps'].info['last_sent_onto_it_s'] * 1e6:.0f} us after it failed"}
    return Prediction(
        "ch9-failover", "Four hosts send 2 MB each across four spines; 2 ms in, one spine link fails and routing "
        "takes 10 ms to reroute. Which finishes first?", measure, options=[
            ("per-flow ECMP", "its flow on the dead link loses every packet and hears nothing until routing "
                              "withdraws the link; meanwhile it only waits"),
            ("spraying with entropy recycling (REPS)", "the measurement says otherwise",
             "The flow ECMP hashed onto the dead link loses every packet and hears nothing: it waits out its "
             "timeouts (1, 2, 4 ms, ...) until routing withdraws the link, and only then moves. REPS reuses only "
             "the entropies (paths) whose packets came back; a dead path's never come back, so within a round "
             "trip or two nothing is sent there, and its traffic is squeezed onto the three spines left, with no "
             "help from routing."),
            ("about the same: both must wait for routing", "REPS does not wait for routing: it learns from its "
             "own ACKs which paths still deliver"),
        ], correct=lambda m: 1 if m["value"] > 1.2 else 0 if m["value"] < 0.83 else 2, path=path)


def ch9_planes(path=None) -> Prediction:
    """Chapter 9, section 5: eight planes with one down."""
    def measure():
        from ...fabric import ethernet
        healthy = ethernet.planes_step(8, switch=replace(ethernet.PLANES, multipath="reps", planes=8))
        down = ethernet.planes_step(8, switch=replace(ethernet.PLANES, multipath="reps", planes=8), failed="link")
        ratio = healthy.time_s / down.time_s
        return {"value": ratio, "text": f"8 planes: healthy {healthy.time_s * 1e3:.3f} ms, one plane down "
                                        f"{down.time_s * 1e3:.3f} ms: {ratio:.3f} of the healthy goodput"}
    return Prediction(
        "ch9-planes", "A NIC split into 8 planes (each its own switch, 1/8 of the rate), a ring step sprayed with "
        "entropy recycling, and host 0's link in one plane down: what fraction of the healthy goodput is left?",
        measure, options=[
            ("about 7/8", "the measurement says otherwise",
             "Host 0's NIC sees its own link down and sprays on the other seven ports; the host sending to it "
             "sees nothing, but its packets on the dead plane never come back, so entropy recycling stops using "
             "that plane within a round trip. Every host still sends on seven planes: 7/8 of the rate. With one "
             "fat link the same failure cuts the host off entirely."),
            ("about half", "only one of eight planes failed; nothing forces the others to share its traffic with "
             "a second plane"),
            ("nothing: the step stalls", "that is the single-link case; with planes, seven ports are still up"),
        ], correct=lambda m: 0 if 0.8 <= m["value"] <= 0.95 else 1 if 0.35 <= m["value"] < 0.8 else 2, path=path)


def ch9_framing(path=None) -> Prediction:
    """Chapter 9, section 6: what share of a link RoCEv2's payload gets at a 1500-byte MTU."""
    def measure():
        from ...net.framing import Framing
        f = Framing("rocev2", 1500)
        return {"value": 100 * f.efficiency(),
                "text": f"RoCEv2 at MTU 1500: {f.payload} B of payload in {f.payload + f.overhead} B on the wire, "
                        f"{f.efficiency():.1%}"}
    return Prediction(
        "ch9-framing", "RDMA over Converged Ethernet (RoCEv2) on a link with the usual 1500-byte MTU: what "
        "percentage of the wire's bytes are payload?", measure, numeric=Numeric(unit="%", tolerance=0.02,
        why="RoCE sends payloads of InfiniBand's sizes (256, 512, 1024, 2048 or 4096 bytes), so a 1500-byte "
            "MTU carries 1024-byte payloads; each packet adds IP, UDP, the InfiniBand transport header and an "
            "invariant CRC (44 bytes), Ethernet's header (14) and on the wire the FCS, preamble and gap (24). "
            "Jumbo frames (4096-byte payloads) bring it near 98 %."), path=path)
