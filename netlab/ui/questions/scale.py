"""The "predict, then measure" questions answered by the flow simulator and the cost formulas at scale:
chapter 5's fabrics and chapter 8's co-design (in-network aggregation, model parallelism's bytes and
speed, the all-to-all on an oversubscribed fabric; ``netlab.ui.questions`` says how they are built)."""
from __future__ import annotations

from ..predict import Prediction


def _nearest(value: float, targets) -> int:
    import math
    return min(range(len(targets)), key=lambda i: abs(math.log(value / targets[i])))


def ch5(seeds: int = 5, path=None) -> Prediction:
    targets = [1.0, 0.5, 0.25]

    def measure():
        from ...sim import experiments
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


def ch8_ina(path=None) -> Prediction:
    """Chapter 8, section 1: the switch's all-reduce against the ring's at large p (closed forms, both
    checked against real ranks in the chapter's next cell)."""
    def measure():
        from ...collectives import cost
        from ...net.network import network
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
        from ...codesign.parallel import MODES, measure
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
        from ...sim import alltoall
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
