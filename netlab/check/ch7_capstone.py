"""Chapter 8's capstone exercise: choose algorithm, compression, bucket size and placement for a cluster.

The cluster: 32 nodes of 8 V100s (fp16 tensor cores at 30 % of peak), NVLink inside a node, one
100 Gbit/s NIC per node, a leaf-spine fabric of 8 hosts per rack with 4:1 oversubscribed uplinks;
the model: VGG-16 (Simonyan & Zisserman 2015; torchvision's model card: 138.4 M parameters,
15.5 G multiply-adds per 224x224 image forward), 64 images per GPU. The student passes choices;
``netlab.codesign.capstone.predict`` (closed form) gives the step and the scaling efficiency, and the check
passes when the efficiency reaches ``target`` and the compression trains (``capstone.trains``:
chapter 4's verdict, and int8's levels on 256 ranks). ``designs`` lists every choice on a grid of
bucket sizes that passes; docs/instructors.md gives each with its reason.
"""
from __future__ import annotations

from . import CheckResult

TARGET = 0.80
BUCKETS = ("256KB", "1MB", "4MB", "25MB", "100MB", "1GB")     # the grid ``designs`` walks


def exercise():
    """(model, cluster) of the exercise."""
    from ..codesign.capstone import ClusterSpec, Model
    model = Model(name="VGG-16", params=138e6, flops_per_sample=3 * 2 * 15.5e9, batch=64)
    cluster = ClusterSpec(nodes=32, devices_per_node=8, nic_bandwidth="100Gbit/s", nic_latency="5us",
                      intra_bandwidth="300GB/s", intra_latency="2us", topology="leaf-spine", oversubscription=4,
                      hosts_per_rack=8, device="V100-fp16", efficiency=0.3)
    return model, cluster


def _hints(p, algo, compression, placement, overlap) -> list[str]:
    """Why the predicted efficiency falls short, one hint per choice that costs it (never the design to pick)."""
    hints = []
    if algo in ("tree", "halving_doubling"):
        hints.append(f"{algo.replace('_', '-')} exchanges with partners p/2, p/4, ... ranks apart, so in its largest "
                     "rounds every GPU of a node sends off the node, and across the spine, at the same time")
    if placement == "scattered" and algo == "ring":
        hints.append("every ring hop crosses a NIC shared by 8 GPUs and most cross the oversubscribed spine")
    if placement == "scattered" and algo == "hierarchical":
        hints.append("the ring between nodes crosses the 4:1 oversubscribed spine at 3 hops of every 4")
    if p.buckets > 100:
        hints.append(f"{p.buckets} buckets each pay the collective's latency")
    if p.buckets == 1 and overlap:
        hints.append("one bucket is ready only when the backward pass ends, so nothing overlaps it")
    if not overlap:
        hints.append("without overlap every all-reduce waits for the backward pass to end")
    if compression in ("topk", "sign", "qsgd", "terngrad"):
        hints.append(f"{compression} is all-gathered: its bytes grow with the 256 ranks")
    return hints


def capstone(*, algo: str = "ring", compression: str = "none", bucket="1MB", placement: str = "scattered",
             overlap: bool = True, error_feedback: bool = False, target: float = TARGET) -> CheckResult:
    """Pass when the predicted scaling efficiency on the exercise's cluster reaches `target` and the
    compression trains (with `error_feedback` or without, as chapter 4 measured it)."""
    from ..codesign.capstone import predict
    from ..units import fmt_bytes, fmt_time
    name = "Capstone (256 GPUs, VGG-16)"
    model, cluster = exercise()
    try:
        p = predict(model, cluster, algo=algo, compression=compression, bucket=bucket, placement=placement,
                    overlap=overlap, error_feedback=error_feedback)
    except ValueError as exc:
        return CheckResult(name, False, f"cannot predict these choices: {exc}")
    fast = p.efficiency >= target
    ok = fast and p.trains
    row = {"algo": algo, "compression": compression + (" + error feedback" if error_feedback else ""),
           "bucket": fmt_bytes(p.setup["bucket_bytes"]), "placement": placement, "overlap": "on" if overlap else "off",
           "step": fmt_time(p.step_s), "exposed comm": fmt_time(p.exposed_s), "efficiency": f"{p.efficiency:.1%}",
           "trains": "yes" if p.trains else "no"}
    if ok:
        return CheckResult(name, True, f"{p.efficiency:.1%} scaling efficiency, at least the {target:.0%} asked, "
                           "and the compression trains", [row])
    if fast:
        message = (f"{p.efficiency:.1%} scaling efficiency would reach the {target:.0%} asked, but the model would not "
                   f"train to the accuracy asked: {p.accuracy}")
    else:
        hints = _hints(p, algo, compression=compression, placement=placement, overlap=overlap)
        message = (f"{p.efficiency:.1%} is below the {target:.0%} asked"
                   + (": " + "; ".join(hints) if hints else ""))
        if not p.trains:
            message += f". And the compression would not train: {p.accuracy}"
    return CheckResult(name, False, message, [row])


def designs(target: float = TARGET, buckets=BUCKETS) -> list[dict]:
    """Every choice on the grid (algorithm, compression with and without error feedback, bucket, placement,
    overlap) that passes the check, with its efficiency."""
    from ..codesign import capstone as cs
    model, cluster = exercise()
    out = []
    for algo in cs.ALGOS:
        for compression in cs.COMPRESSION:
            for ef in (False, True):
                if compression == "none" and ef:
                    continue
                for placement in cs.PLACEMENTS:
                    for bucket in buckets:
                        for overlap in (True, False):
                            p = cs.predict(model, cluster, algo=algo, compression=compression, bucket=bucket,
                                           placement=placement, overlap=overlap, error_feedback=ef)
                            if p.trains and p.efficiency >= target:
                                out.append(dict(algo=algo, compression=compression, error_feedback=ef,
                                                bucket=bucket, placement=placement, overlap=overlap,
                                                efficiency=p.efficiency))
    return out
