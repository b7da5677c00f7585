"""Chapter 7's capstone exercise: choose algorithm, compression, bucket size and placement for a cluster.

The cluster: 32 nodes of 8 V100s (fp16 tensor cores at 30 % of peak), NVLink inside a node, one
100 Gbit/s NIC per node, a leaf-spine fabric of 8 hosts per rack with 4:1 oversubscribed uplinks;
the model: VGG-16 (Simonyan & Zisserman 2015; torchvision's model card: 138.4 M parameters,
15.5 G multiply-adds per 224x224 image forward), 64 images per GPU. The student passes choices; ``netlab.capstone.predict`` (closed
form) gives the step and the scaling efficiency, and the check passes at ``target`` or better.
"""
from __future__ import annotations

from . import CheckResult

TARGET = 0.80


def exercise():
    """(model, cluster) of the exercise."""
    from ..capstone import Cluster, Model
    model = Model(name="VGG-16", params=138e6, flops_per_sample=3 * 2 * 15.5e9, batch=64)
    cluster = Cluster(nodes=32, devices_per_node=8, nic_bandwidth="100Gbit/s", nic_latency="5us",
                      intra_bandwidth="300GB/s", intra_latency="2us", topology="leaf-spine", oversubscription=4,
                      hosts_per_rack=8, device="V100-fp16", efficiency=0.3)
    return model, cluster


def capstone(*, algo: str = "ring", compression: str = "none", bucket="1MB", placement: str = "scattered",
             overlap: bool = True, target: float = TARGET) -> CheckResult:
    """Pass when the predicted scaling efficiency on the exercise's cluster reaches `target`."""
    from ..capstone import predict
    from ..units import fmt_bytes, fmt_time
    name = "Capstone (256 GPUs, VGG-16)"
    model, cluster = exercise()
    try:
        p = predict(model, cluster, algo=algo, compression=compression, bucket=bucket, placement=placement,
                    overlap=overlap)
    except ValueError as exc:
        return CheckResult(name, False, f"cannot predict these choices: {exc}")
    ok = p.efficiency >= target
    row = {"algo": algo, "compression": compression, "bucket": fmt_bytes(p.setup["bucket_bytes"]),
           "placement": placement, "overlap": "on" if overlap else "off", "step": fmt_time(p.step_s),
           "exposed comm": fmt_time(p.exposed_s), "efficiency": f"{p.efficiency:.1%}"}
    if ok:
        message = f"{p.efficiency:.1%} scaling efficiency, at least the {target:.0%} asked"
    else:
        hints = []
        if p.buckets > 100:
            hints.append(f"{p.buckets} buckets each pay the collective's latency")
        if placement == "scattered" and algo != "hierarchical":
            hints.append("every ring hop crosses a NIC shared by 8 GPUs and most cross the oversubscribed spine")
        if compression in ("topk", "sign", "qsgd", "terngrad"):
            hints.append(f"{compression} is all-gathered: its bytes grow with the 256 ranks")
        message = (f"{p.efficiency:.1%} is below the {target:.0%} asked"
                   + (": " + "; ".join(hints) if hints else ""))
    return CheckResult(name, ok, message, [row])
