"""The "predict, then measure" questions answered by training or collectives on real ranks: chapter 1's
step, chapter 2's all-reduce, chapter 3's parameter servers, chapter 4's compression and chapter 7's
buckets (``netlab.ui.questions`` says how every question is built)."""
from __future__ import annotations

from ..predict import Prediction


def ch1(path=None) -> Prediction:
    def measure():
        from ...dataparallel.step import measure_step
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
        from ...net import network
        from ...collectives.bench import bench
        net, size = network("100Gbit/s", "5us"), 16 << 20
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
        from ... import ps
        from ...net.network import network
        from ...ps import formulas
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
        from ...compress.training import run_training
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


def ch7(path=None) -> Prediction:
    def measure():
        from ...dataparallel.step import measure_step
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
