"""Each chapter's "predict, then measure" question as a ``Prediction`` widget (see predict.py).

The measurement runs when the student locks an answer, on real ranks or in the simulator, with the
same setup as the chapter's next cell (smaller where that cell is long); the right option is read
off the measurement, never written in. Explanations say why each wrong option is wrong.
"""
from __future__ import annotations

from .predict import Prediction


def _nearest(value: float, targets) -> int:
    import math
    return min(range(len(targets)), key=lambda i: abs(math.log(value / targets[i])))


def ch1(path=None) -> Prediction:
    def measure():
        from ..step import measure_step
        c4, c8 = (measure_step(ranks=p, bandwidth="10Gbit/s", latency="5us", width=512).comm_s for p in (4, 8))
        return {"value": c8 / c4, "text": f"communication {c4 * 1e3:.3f} ms on 4 nodes, {c8 * 1e3:.3f} ms on 8: "
                                          f"x{c8 / c4:.2f}"}
    return Prediction(
        "ch1-four-to-eight-nodes", "From 4 to 8 nodes (same model, 10 Gbit/s, 5 us), the communication time...",
        measure, options=[
            ("doubles", "in a ring each node sends 2(p-1)/p of the gradient: 1.5x at 4 nodes, 1.75x at 8, never 2x "
                        "more, so the bytes per node barely grow"),
            ("stays about the same", "the bytes per node grow a little (1.5x -> 1.75x the gradient), and the "
                                     "2(p-1) messages each pay the latency once"),
            ("grows by a small amount", "the measurement says otherwise: look at the bytes each node sent"),
        ], correct=lambda m: 0 if m["value"] >= 1.8 else 1 if m["value"] < 1.05 else 2, path=path)


def ch2(path=None) -> Prediction:
    def measure():
        import netlab
        from ..bench import bench
        net, size = netlab.network("100Gbit/s", "5us"), 16 << 20
        t = {(a, p): bench("allreduce", a, p, [size], net)[0]["time_s"] for a in ("naive", "ring") for p in (2, 8)}
        naive, ring = t["naive", 8] / t["naive", 2], t["ring", 8] / t["ring", 2]
        return {"value": [naive, ring], "text": f"16 MiB, 2 -> 8 ranks: naive x{naive:.2f}, ring x{ring:.2f}"}

    def correct(m):
        naive, ring = m["value"]
        return 1 if naive > 4 and ring < 2 else 0 if naive > 3 and ring > 3 else 2
    return Prediction(
        "ch2-naive-vs-ring", "Going from 2 to 8 ranks on 100 Gbit/s, the naive all-reduce and the ring...",
        measure, options=[
            ("both slow down about 4x", "the ring's bytes per rank stay below 2n: it hardly slows down"),
            ("naive about 7x slower, ring barely slower", "rank 0's port carries 2(p-1) whole vectors; the ring "
                                                          "keeps every port busy with n/p-sized pieces"),
            ("both stay about the same", "the naive one funnels everything through rank 0: 2(p-1) full vectors"),
        ], correct=correct, path=path)


def ch3(path=None) -> Prediction:
    def measure():
        from .. import ps
        c = {p: ps.run_ps(workers=p, servers=1, mode="bsp", steps=1, width=512, bandwidth="1Gbit/s",
                          latency="5us", eval_every=0).comm_s for p in (2, 8)}
        return {"value": c[8] / c[2], "text": f"one server: push/pull {c[2] * 1e3:.2f} ms with 2 workers, "
                                              f"{c[8] * 1e3:.2f} ms with 8: x{c[8] / c[2]:.2f}"}
    return Prediction(
        "ch3-one-server", "With one server, from 2 to 8 workers, the step's communication time...", measure,
        options=[
            ("stays the same", "every worker's bytes go through the one server's NIC: p M in and p M out"),
            ("grows a little", "the server's NIC, not the workers', is the bottleneck: its load grows with p"),
            ("grows about 4x", "the formula max(M/B, pM/(kB)) with k = 1 grows linearly with p"),
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
            ("about 0.5", "with k flows hashed onto k uplinks the busiest one carries several, not two"),
            ("about 0.25", "hash collisions put about ln k / ln ln k flows on the busiest link"),
        ], correct=lambda m: _nearest(m["value"], targets), path=path)
