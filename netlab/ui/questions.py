"""Each chapter's "predict, then measure" question as a ``Prediction`` widget (see predict.py).

The measurement runs when the student locks an answer, on real ranks, in the simulator or in the
packet-level fabric, with the same setup as the chapter's next cell (smaller where that cell is
long); the right option is read off the measurement, never written in. Explanations say why each
wrong option is wrong and, for the option the measurement makes right, why it is: the chapter's
text below the question only points here, so the explanation is read after answering. Sources are
the chapters' own (BytePS, OSDI 2020; Vasudevan et al., SIGCOMM 2009; PyTorch DDP's buckets).
"""
from __future__ import annotations

from dataclasses import replace

from .predict import Prediction


def _nearest(value: float, targets) -> int:
    import math
    return min(range(len(targets)), key=lambda i: abs(math.log(value / targets[i])))


def ch1(path=None) -> Prediction:
    def measure():
        from ..dataparallel.step import measure_step
        r4, r8 = (measure_step(ranks=p, bandwidth="10Gbit/s", latency="5us", width=512) for p in (4, 8))
        c4, c8 = r4.comm_s, r8.comm_s
        sent = [r.trace.summary()[0]["bytes_sent"] / r.grad_bytes for r in (r4, r8)]
        return {"value": c8 / c4, "sent_per_gradient": sent,
                "text": f"communication {c4 * 1e3:.3f} ms on 4 nodes, {c8 * 1e3:.3f} ms on 8: x{c8 / c4:.2f}; "
                        f"rank 0 sent {sent[0]:.3f} x the gradient on 4 nodes, {sent[1]:.3f} x on 8"}
    return Prediction(
        "ch1-four-to-eight-nodes", "From 4 to 8 nodes (same model, 10 Gbit/s, 5 us), the communication time...",
        measure, options=[
            ("doubles", "in a ring each node sends 2(p-1)/p of the gradient: 1.5x at 4 nodes, 1.75x at 8, never 2x "
                        "more, so the bytes per node barely grow"),
            ("stays about the same", "the bytes per node grow a little (1.5x -> 1.75x the gradient), and the "
                                     "2(p-1) messages each pay the latency once"),
            ("grows by a small amount", "the measurement says otherwise: look at the bytes each node sent",
             "The all-reduce used here is a ring: each rank sends 2(p-1)/p of the gradient in total -- 1.0x at "
             "p = 2, 1.5x at p = 4, 1.75x at p = 8 (the measurement above counts rank 0's bytes) -- approaching 2x "
             "and never more, however many nodes join. What does grow with p is the number of sequential "
             "messages, 2(p-1), each paying the latency once. Chapter 2 takes the ring apart; here it is enough "
             "that the bytes per node barely grow."),
        ], correct=lambda m: 0 if m["value"] >= 1.8 else 1 if m["value"] < 1.05 else 2, path=path)


def ch2(path=None) -> Prediction:
    def measure():
        import netlab
        from ..collectives.bench import bench
        net, size = netlab.network("100Gbit/s", "5us"), 16 << 20
        t = {(a, p): bench("allreduce", a, p, [size], network=net)[0]["time_s"] for a in ("naive", "ring") for p in (2, 8)}
        naive, ring = t["naive", 8] / t["naive", 2], t["ring", 8] / t["ring", 2]
        return {"value": [naive, ring], "text": f"16 MiB, 2 -> 8 ranks: naive x{naive:.2f}, ring x{ring:.2f}"}

    def correct(m):
        naive, ring = m["value"]
        return 1 if naive > 4 and ring < 2 else 0 if naive > 3 and ring > 3 else 2
    return Prediction(
        "ch2-naive-vs-ring", "Going from 2 to 8 ranks on 100 Gbit/s, the naive all-reduce and the ring...",
        measure, options=[
            ("both slow down about 4x", "the ring's bytes per rank grow from n to 1.75 n, never to 2 n: it slows "
                                        "down by less than 2x"),
            ("naive about 7x slower, the ring less than 2x slower", "the measurement says otherwise",
             "Rank 0's port carries 2(p-1) whole vectors in the naive all-reduce: 2 at p = 2, 14 at p = 8, so its "
             "time grows 7x. The ring keeps every port busy with n/p-sized pieces: each rank sends 2(p-1)/p n in "
             "all, 1 n at p = 2 and 1.75 n at p = 8, never 2 n however many ranks join, so its time grows by about "
             "three quarters; its 2(p-1) latencies, one per message, add little at this size."),
            ("both stay about the same", "the naive one funnels everything through rank 0: 2(p-1) full vectors, "
                                         "and the ring's bytes per rank grow from n to 1.75 n"),
        ], correct=correct, path=path)


def ch3(path=None) -> Prediction:
    def measure():
        from .. import ps
        from ..net.network import network
        from ..ps import formulas
        runs = {p: ps.run_ps(workers=p, servers=1, mode="bsp", steps=1, width=512, bandwidth="1Gbit/s",
                             latency="5us", eval_every=0) for p in (2, 8)}
        c = {p: r.comm_s for p, r in runs.items()}
        bw = network("1Gbit/s").nic.bandwidth
        f = {p: formulas.ps_time(p, 1, r.setup["model_bytes"], bw) for p, r in runs.items()}
        return {"value": c[8] / c[2], "formula_s": [f[2], f[8]], "comm_s": [c[2], c[8]],
                "text": f"one server: push/pull {c[2] * 1e3:.2f} ms with 2 workers, {c[8] * 1e3:.2f} ms with 8: "
                        f"x{c[8] / c[2]:.2f} (the formula max(M/B, pM/(kB)): {f[2] * 1e3:.2f} and "
                        f"{f[8] * 1e3:.2f} ms; measured {100 * (c[8] / f[8] - 1):.1f} % above it with 8)"}
    return Prediction(
        "ch3-one-server", "With one server, from 2 to 8 workers, the step's communication time...", measure,
        options=[
            ("stays the same", "every worker's bytes go through the one server's NIC: p M in and p M out"),
            ("grows a little", "the server's NIC, not the workers', is the bottleneck: its load grows with p"),
            ("grows about 4x", "the formula max(M/B, pM/(kB)) with k = 1 grows linearly with p",
             "A server's NIC must take in p M / k bytes and send out as many, while each worker's NIC carries "
             "only M each way. With one server the step is p M / B: it grows linearly with the workers, however "
             "fast the workers are."),
        ], correct=lambda m: 2 if m["value"] > 3 else 0 if m["value"] < 1.1 else 1, path=path)


def ch4(ranks: int = 2, steps: int = 100, path=None) -> Prediction:
    def measure():
        from ..compress.training import run_training
        base = run_training("none", ranks=ranks, steps=steps).final_accuracy
        topk = run_training("topk", ranks=ranks, steps=steps, ratio=0.01).final_accuracy
        return {"value": base - topk, "text": f"{ranks} ranks, {steps} steps: fp32 {base:.3f}, top-1% without "
                                              f"error feedback {topk:.3f} (a gap of {100 * (base - topk):.1f} points)"}
    return Prediction(
        "ch4-topk-no-feedback", "Top-k keeping 1 % of each gradient, without error feedback: its test accuracy "
        "after training is...", measure, options=[
            ("about the same as fp32 (within 1 point)", "the 99 % never sent are lost for good: small but "
                                                        "consistent gradient directions are never applied"),
            ("a few points lower (1 to 10)", "see the measured gap: it decides between 'a few' and 'far'"),
            ("far lower (more than 10 points)", "see the measured gap: it decides between 'a few' and 'far'"),
        ], correct=lambda m: 0 if m["value"] < 0.01 else 1 if m["value"] <= 0.10 else 2, path=path)


def ch5(seeds: int = 5, path=None) -> Prediction:
    targets = [1.0, 0.5, 0.25]

    def measure():
        from ..sim import experiments
        rows = experiments.ecmp_collisions(k=8, seeds=seeds, nbytes=64 << 20, modes=("ecmp",))
        s = next(r for r in experiments.summarize(rows) if r["placement"] == "shuffled")
        return {"value": s["mean"], "text": f"k=8 fat-tree, 128 shuffled ranks, {seeds} seeds: the slowest flow "
                                            f"gets {s['mean']:.2f} x line rate on average ({s['min']:.2f}-{s['max']:.2f})"}
    return Prediction(
        "ch5-ecmp-collisions", "Ring all-reduce on 128 randomly placed ranks of a k = 8 fat-tree with ECMP: the "
        "slowest flow of a step gets what fraction of line rate?", measure, options=[
            ("1.0: full bisection", "full bisection means the fabric *could* carry it; a hash does not look "
                                    "at what else is on the link it picks"),
            ("about 0.5", "that is one switch's busiest uplink, 2.125 flows on average; the step waits for the "
                          "worst link of all 64 switches that hash its flows"),
            ("about 0.25", "the measurement says otherwise",
             "A hash does not look at what else is on a link. One switch hashing 4 flows onto its 4 uplinks puts "
             "2.125 flows on the busiest one on average (all 256 hashings, counted a few cells below): a slowest "
             "flow of about 0.47 if that switch were the whole fabric. But a step waits for the worst link of the "
             "whole fabric, and the 128 flows are hashed at 32 edge switches and again at 32 aggregation "
             "switches: the worst of the 32 edge switches alone carries over 3 flows on average, and with the "
             "aggregation layer's hashing the busiest link usually carries 4. Under max-min fairness on equal "
             "links the slowest flow gets 1 / (flows on the busiest link): about 0.25."),
        ], correct=lambda m: _nearest(m["value"], targets), path=path)


def ch6(rounds: int = 1, path=None) -> Prediction:
    def measure():
        from ..fabric import Congestion, Incast, incast
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


def ch7(path=None) -> Prediction:
    def measure():
        from ..dataparallel.step import measure_step
        shape, net = dict(width=256, layers=4, batch=256), dict(bandwidth="10Gbit/s", latency="50us")
        one = measure_step(ranks=4, bucket=10**12, overlap=True, **net, **shape)
        two = measure_step(ranks=4, bucket=300_000, overlap=True, **net, **shape)
        saved, exposed = one.total_s - two.total_s, one.setup["exposed_comm_s"]
        return {"value": saved, "exposed_s": exposed, "steps_s": [one.total_s, two.total_s],
                "text": f"4 ranks: one bucket {one.total_s * 1e3:.3f} ms, ~300 KB buckets {two.total_s * 1e3:.3f} ms "
                        f"a step: {saved * 1e3:.3f} ms saved of the one bucket's {exposed * 1e3:.3f} ms of "
                        f"exposed communication"}

    def correct(m):
        saved, exposed = m["value"], m["exposed_s"]
        return 0 if saved < 0.02 * exposed else 2 if saved >= 0.98 * exposed else 1
    return Prediction(
        "ch7-two-buckets", "Two buckets of about 300 KB instead of one: compared with one bucket, the step "
        "is...", measure, options=[
            ("the same", "the first bucket's all-reduce runs while the backward pass is still computing the "
                         "first layers: that time is hidden"),
            ("faster, by at most the all-reduce of the first bucket", "the measurement says otherwise",
             "Only the buckets that finish while the backward pass still runs are hidden. The last bucket (the "
             "first layers' gradients) is ready only at the end of the backward pass, so its all-reduce is "
             "always exposed, and buckets queue behind each other on the one network port."),
            ("faster by the whole all-reduce time", "the last bucket holds the first layers' gradients, ready "
                                                    "only when the backward pass ends: its all-reduce is "
                                                    "always exposed"),
        ], correct=correct, path=path)


def ch8_ina(path=None) -> Prediction:
    """Chapter 8, section 1: the switch's all-reduce against the ring's at large p (closed forms, both
    checked against real ranks in the chapter's next cell)."""
    def measure():
        from ..collectives import cost
        from ..net.network import network
        nic, s, p, k = network("100Gbit/s", "5us").nic, 64 << 20, 64, 16
        ring, ina = cost.ring_allreduce(p, s, nic), cost.ina_allreduce(p, s, nic, chunks=k)
        return {"value": ring / ina, "p": p,
                "text": f"p = {p}, S = 64 MiB, 100 Gbit/s, {k} chunks: ring {ring * 1e3:.3f} ms, switch "
                        f"{ina * 1e3:.3f} ms: the switch takes {ina / ring:.2f} of the ring's time"}

    def correct(m):
        ratio = m["value"]
        return 2 if ratio > m["p"] / 2 else 1 if 1.5 < ratio < 2.5 else 0
    return Prediction(
        "ch8-in-network", "For a large S on 64 workers, the switch's all-reduce time compared with the ring's "
        "is...", measure, options=[
            ("about the same", "the ring sends 2(p-1)/p of S each way, nearly 2S at large p; each worker sends S "
                               "to the switch once"),
            ("about half", "the measurement says otherwise",
             "The ring's bandwidth term 2(p-1)/p*S/B approaches 2S/B; the switch's is (k+1)/k*S/B with k chunks, "
             "whatever p, because up and down overlap on the full-duplex port, so busbw nearly doubles at large p. "
             "Two limits, both printed below: at p = 2 the ring moves only S each way and the switch has nothing "
             "to gain; and an aggregator slower than the line rate caps everything at about S / capacity, which "
             "is why SwitchML and SHARP sum at line rate in the switch's pipeline."),
            ("about 1/p", "each worker still sends its whole S up and receives the whole sum back: the port's "
                          "bandwidth, not p, sets the time"),
        ], correct=correct, path=path)


def _least_of_three(bandwidth: str, field: str, label: str, fmt):
    """(measure, correct) for "which of dp, tp, pp has the least `field`": one run of each on
    `bandwidth`, and the index of the least in ``parallel.MODES`` order (the options' order)."""
    def measure():
        from ..codesign.parallel import MODES, measure
        shape = dict(ranks=4, latency="50us", width=256, layers=4, micro_batches=4)
        value = {m: getattr(measure(m, bandwidth=bandwidth, batch=256, **shape), field) for m in MODES}
        return {"value": value, "text": f"{label}, 4 ranks: " + ", ".join(f"{m} {fmt(v)}" for m, v in value.items())}

    def correct(m):
        return list(m["value"]).index(min(m["value"], key=m["value"].get))
    return measure, correct


def ch8_bytes(path=None) -> Prediction:
    """Chapter 8, section 3: which of data, tensor and pipeline parallelism sends the fewest bytes."""
    measure, correct = _least_of_three("10Gbit/s", "bytes_per_step", "bytes per step", lambda b: f"{b / 1e6:.2f} MB")
    return Prediction(
        "ch8-parallel-bytes", "Data (dp), tensor (tp) or pipeline (pp) parallelism, on the chapter's MLP with a "
        "global batch of 256 on 4 ranks: which sends the fewest bytes per step?", measure, options=[
            ("data parallelism", "it all-reduces every gradient, 0.87 MB, once per step: the most of the three"),
            ("tensor parallelism", "it all-reduces the activations of every layer pair, forward and backward: "
                                   "batch x width floats each time, a little less than data parallelism here, "
                                   "and four times more at four times the batch"),
            ("pipeline parallelism", "the measurement says otherwise",
             "The pipeline sends one activation and one gradient per cut between stages, point to point: the "
             "fewest bytes. Data parallelism sends the most (the gradients: its traffic follows the parameters, "
             "whatever the batch), tensor parallelism a little less (its traffic follows the batch and the "
             "number of layers, so at four times the batch it passes data parallelism's). The run below prints "
             "both batches."),
        ], correct=correct, path=path)


def ch8_fastest(path=None) -> Prediction:
    """Chapter 8, section 3: which of the three has the fastest step on a slow (1 Gbit/s) network."""
    measure, correct = _least_of_three("1Gbit/s", "step_s", "step at 1 Gbit/s", lambda t: f"{t * 1e3:.3f} ms")
    return Prediction(
        "ch8-parallel-fastest", "On a 1 Gbit/s network (same model, batch and ranks), whose step is fastest?",
        measure, options=[
            ("data parallelism", "its one all-reduce of all the gradients is the most bytes of the three: on a "
                                 "slow network the step is mostly that transfer"),
            ("tensor parallelism", "it pays a ring all-reduce (and 2(p-1) latencies) in each of its three "
                                   "exchanges, and sends nearly as much as data parallelism"),
            ("pipeline parallelism", "the measurement says otherwise",
             "On the slow network the pipeline is fastest: a step there is mostly transfers, and it sends the "
             "fewest bytes. On a fast network data parallelism wins, because its one all-reduce costs little, "
             "while the pipeline's bubble does not shrink with bandwidth. Which cut suits a model is a question "
             "about the network: tensor parallelism's traffic grows with batch x layers, so it is kept inside a "
             "server on the fastest links (NVLink); the pipeline sends only the activations at its cuts, so it "
             "can span the slower links between servers; data parallelism's grows with the parameters alone."),
        ], correct=correct, path=path)


def ch8(path=None) -> Prediction:
    """Chapter 8, section 4: a ring all-reduce and an all-to-all on a fat-tree oversubscribed 4:1 at the
    edge, against 1:1 (the flow simulator; the chapter's next cell prints the same runs)."""
    def measure():
        from ..sim import alltoall
        rows = alltoall.bisection(k=8, ratios=(1, 4), nbytes=64 << 20)
        slow = {r["pattern"]: r["slowdown"] for r in rows if r["ratio"] == 4}
        return {"value": [slow["ring all-reduce"], slow["all-to-all"]],
                "text": f"k = 8 fat-tree, 128 hosts, 64 MiB per rank, 4:1 at the edge against 1:1: ring all-reduce "
                        f"x{slow['ring all-reduce']:.2f}, all-to-all x{slow['all-to-all']:.2f}"}

    def correct(m):
        ring, a2a = m["value"]
        return 1 if ring < 1.1 and a2a > 2 else 0 if ring > 2 and a2a > 2 else 2
    return Prediction(
        "ch8-alltoall-bisection", "A k = 8 fat-tree (128 hosts, 4 under each edge switch) has its edge switches' "
        "uplinks cut to a quarter (4:1). Compared with 1:1, a ring all-reduce and an all-to-all of 64 MiB per rank "
        "get...", measure, options=[
            ("both about 4x slower", "a ring's neighbours sit under the same edge switch: of an edge's four ranks "
                                     "only one sends out of it, and four uplinks of B/4 still carry that one flow "
                                     "at B"),
            ("the ring about as fast, the all-to-all several times slower", "the measurement says otherwise",
             "What matters is how many bytes leave the edge switch. In a ring in topology order, three of an edge's "
             "four ranks send to a neighbour under the same switch; one flow leaves, and the uplinks (4 x B/4 = B "
             "at 4:1) carry it at full speed, so nothing changes until the ratio passes 4. In an all-to-all every "
             "rank sends 124 of its 128 blocks to ranks under other switches: 97 % of its bytes go up through "
             "uplinks that now carry a quarter of what the hosts can send, so it takes close to four times as long "
             "(the latency terms, which do not grow, keep it a little under). This is the bisection bandwidth an "
             "oversubscription ratio takes away, and why expert parallelism needs it and data parallelism does not."),
            ("both about the same: each rank's NIC is the limit", "at 1:1 the NIC is the limit; at 4:1 the uplinks "
                                                                 "of an edge switch carry less than its four NICs "
                                                                 "send, and only the pattern decides whether that "
                                                                 "matters"),
        ], correct=correct, path=path)


# ---- chapter 9: Ethernet for AI ------------------------------------------------------------------------
def ch9(path=None) -> Prediction:
    """Chapter 9, section 1: one ring all-reduce step with shuffled ranks on a fat-tree, ECMP against spraying."""
    def measure():
        from ..fabric import ethernet
        t = {m: ethernet.ring_step(None, 512 * 1024,
                                   switch=replace(ethernet.RING, topology="fattree:4", transport="nscc", multipath=m))
             for m in ("ecmp", "spray")}
        ratio = t["ecmp"].completion_s / t["spray"].completion_s
        return {"value": ratio, "collisions": t["ecmp"].info["ecmp_collisions"],
                "text": f"16 hosts, 512 KB each: ECMP {t['ecmp'].completion_s * 1e3:.2f} ms, spraying "
                        f"{t['spray'].completion_s * 1e3:.2f} ms (x{ratio:.2f}); the busiest link under ECMP carried "
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
        from ..fabric import ethernet
        r = ethernet.ring_step(None, 512 * 1024,
                               switch=replace(ethernet.RING, topology="fattree:4", transport="reno", multipath="spray", window=64 * 1024))
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
        from ..fabric import ethernet
        n, block = 16, 256 * 1024
        r = ethernet.incast(n, block,
                            switch=replace(ethernet.INCAST, transport="nscc", trim=True, buffer=32 * 1024, rto_min=0.2))
        s = r.summary()
        return {"value": r.completion_s / r.ideal_s, "timeouts": s["timeouts"], "trims": s["trims"],
                "text": f"trimming + NSCC: {r.completion_s * 1e3:.2f} ms (N x block / B = {r.ideal_s * 1e3:.2f} ms), "
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
        from ..fabric import ethernet
        t = {m: ethernet.failover(8, 2 * 1024 * 1024,
                                  switch=replace(ethernet.FAILOVER, multipath=m)) for m in ("ecmp", "reps")}
        ratio = t["ecmp"].completion_s / t["reps"].completion_s
        return {"value": ratio, "text": f"ECMP {t['ecmp'].completion_s * 1e3:.1f} ms, REPS {t['reps'].completion_s * 1e3:.1f} "
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
        from ..fabric import ethernet
        healthy = ethernet.planes_step(8, switch=replace(ethernet.PLANES, multipath="reps", planes=8))
        down = ethernet.planes_step(8, switch=replace(ethernet.PLANES, multipath="reps", planes=8), failed="link")
        ratio = healthy.completion_s / down.completion_s
        return {"value": ratio, "text": f"8 planes: healthy {healthy.completion_s * 1e3:.3f} ms, one plane down "
                                        f"{down.completion_s * 1e3:.3f} ms: {ratio:.3f} of the healthy goodput"}
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
        from ..net.framing import Framing
        f = Framing("rocev2", 1500)
        return {"value": 100 * f.efficiency(),
                "text": f"RoCEv2 at MTU 1500: {f.payload} B of payload in {f.payload + f.overhead} B on the wire, "
                        f"{f.efficiency():.1%}"}
    return Prediction(
        "ch9-framing", "RDMA over Converged Ethernet (RoCEv2) on a link with the usual 1500-byte MTU: what "
        "percentage of the wire's bytes are payload?", measure, unit="%", tolerance=0.02,
        why="RoCE sends payloads of InfiniBand's sizes (256, 512, 1024, 2048 or 4096 bytes), so a 1500-byte "
            "MTU carries 1024-byte payloads; each packet adds IP, UDP, the InfiniBand transport header and an "
            "invariant CRC (44 bytes), Ethernet's header (14) and on the wire the FCS, preamble and gap (24). "
            "Jumbo frames (4096-byte payloads) bring it near 98 %.", path=path)
