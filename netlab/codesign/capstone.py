"""Chapter 8's capstone: predict a data-parallel step and its scaling efficiency on a cluster you describe.

Given a model (parameters, training FLOPs per sample, batch per device), a cluster (nodes, devices
per node, NIC and intra-node links, a single switch or a leaf-spine with an oversubscription ratio)
and the student's choices (all-reduce algorithm, compression from ``netlab.compress``, bucket size,
placement of ranks on the ring, overlap), ``predict`` returns the step time and the weak-scaling
efficiency: one device's step (compute + optimizer) over the cluster's step, i.e. per-device
throughput at scale over per-device throughput alone (the definition Horovod's benchmark uses).

Which model is used where (``ScalingEstimate.method`` says it):

* **closed form** (always): compute = FLOPs / (peak x efficiency) (``net.presets.Device``); backward
  = 2/3 of it (a backward costs two forwards); gradients become ready at a uniform rate during the
  backward and are cut into ``bucket``-byte buckets in that order; each bucket's collective costs
  ``collectives.cost.time`` (alpha-beta, Thakur et al. 2005) on the effective link below, plus its codec time
  (``compress.codec_cost.flops_per_element``), on one communication stream; a bucket starts at
  max(its ready time, the previous bucket's end), as in ``dataparallel.overlap.pipeline_time``.
* **real ranks** (``measure``): where the cluster fits this machine (one device per node, at most
  ``runtime.pool.MAX_RANKS`` nodes, the lab's MLP, no compression) the same question is answered by
  ``dataparallel.step.measure_step`` with buckets and overlap, so the closed form can be checked against it
  (``tests/test_capstone.py``).

The effective NIC bandwidth a ring flow gets: ``placement="packed"`` lays ranks on the ring node by
node and rack by rack, so one flow leaves each node and each rack; ``"scattered"`` lays them round
robin over the nodes, so every hop crosses a NIC (the node's ``devices_per_node`` flows share it)
and a fraction (R-1)/R of them cross the spine, whose uplinks carry ``hosts_per_rack`` NICs'
worth divided by the oversubscription. Tree and halving-doubling exchange with partners p/2, p/4, ...
ranks apart, so in their largest rounds every device of a node sends off the node and across the spine
at once: they get the scattered bandwidth whatever the placement. ``"hierarchical"`` reduces inside each node first
(``collectives.cost.time``'s hierarchical formula), so only one flow per node uses the NIC whatever the
placement; its inter-node ring still crosses racks as the placement says.

Accuracy (``trains``): a design reaches a target only if its compression trains, as chapter 4 measured it.
Chapter 4's training (``compress.training.run_training``: the chapter's MLP on 4 real ranks, 300 steps,
seed 0, each compressor with the settings ``payload_ratio`` measures) decides: a compressor trains when it
did not diverge and ends within ``ACCURACY_POINTS`` of fp32's test accuracy. ``TRAINS`` holds the outcome
of those runs for every compression, with and without error feedback; ``measure_trains`` reruns one and
``tests/test_capstone.py`` reruns them all. Biased compressors without error feedback (top-k, scaled
sign) fall short, random-k at 1 % diverges with and without it. One rule depends on the cluster, not
on a run: int8 with a shared scale keeps p x levels <= 127 so that no sum overflows (chapter 4), which
leaves no level at all beyond 127 ranks. The accuracy of 256 ranks is not trained here: the verdict is
chapter 4's, at 4 ranks.

Left out: congestion and packet loss (chapter 6), stragglers, the flow simulator's ECMP collisions
(chapter 5: a packed ring on a leaf-spine has one flow per uplink, so none collide), GPU kernel and
framework overheads (Horovod's negotiation, tensor-fusion cycle), how accuracy changes with the number
of ranks (beyond int8's levels), and gradient readiness that is not uniform (a real model's is measured
in ``measure``).

One concept: the capstone's predictor, a cluster description (``ClusterSpec``) and the one step-time
model that turns it into a prediction.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from .. import compress, validate
from ..collectives import cost
from ..compress.codec_cost import flops_per_element
from ..net.network import Link, Network
from ..net.presets import DEVICES, Device
from ..units import parse_bandwidth, parse_bytes, parse_time

ALGOS = ("ring", "tree", "halving_doubling", "hierarchical")
COMPRESSION = ("none", "fp16", "bf16", "int8", "qsgd", "terngrad", "sign", "topk", "randomk")
PLACEMENTS = ("packed", "scattered")
TOPOLOGIES = ("single-switch", "leaf-spine")
P100 = Device("P100-fp32", 9.3e12)      # NVIDIA Tesla P100 PCIe datasheet: 9.3 TFLOP/s fp32 (Horovod's "Pascal")


@dataclass(frozen=True, kw_only=True)
class Model:
    """What a step computes and sends: parameters (fp32 gradients), training FLOPs per sample, batch per device."""
    name: str = "model"
    params: float
    flops_per_sample: float          # forward + backward, FLOPs (not multiply-adds)
    batch: int

    def __post_init__(self):
        validate.positive(self.params, "params")
        validate.positive(self.flops_per_sample, "flops_per_sample")
        validate.whole(self.batch, "batch", 1, int_only=True)

    @property
    def grad_bytes(self) -> float:
        return 4.0 * self.params


@dataclass(frozen=True, kw_only=True)
class ClusterSpec:
    """Nodes of `devices_per_node` devices; one NIC per node; a single switch or a leaf-spine fabric."""
    nodes: int
    devices_per_node: int = 1
    nic_bandwidth: str | float = "25Gbit/s"
    nic_latency: str | float = "5us"
    intra_bandwidth: str | float = "15.75GB/s"      # PCIe 3.0 x16 (net.presets LINKS["PCIe3x16"])
    intra_latency: str | float = "1us"
    topology: str = "single-switch"
    oversubscription: float = 1.0                   # leaf-spine: hosts' bandwidth / uplink bandwidth per leaf
    hosts_per_rack: int = 16
    device: str | Device = P100
    efficiency: float = 0.5                         # model FLOPs utilisation of the device

    def __post_init__(self):
        validate.whole(self.nodes, "nodes", 1, int_only=True)
        validate.whole(self.devices_per_node, "devices_per_node", 1, int_only=True)
        validate.choice(self.topology, "topology", TOPOLOGIES)
        validate.number(self.oversubscription, "oversubscription", 1.0)
        validate.whole(self.hosts_per_rack, "hosts_per_rack", 1, int_only=True)
        validate.fraction(self.efficiency, "efficiency")
        if not isinstance(self.device, Device):
            validate.choice(self.device, "device", DEVICES)
        self.nic, self.intra                          # parse now: a bad value fails here, named

    @property
    def ranks(self) -> int:
        return self.nodes * self.devices_per_node

    @property
    def nic(self) -> Link:
        return Link(_bandwidth(self.nic_bandwidth, "nic_bandwidth"), _seconds(self.nic_latency, "nic_latency"))

    @property
    def intra(self) -> Link:
        return Link(_bandwidth(self.intra_bandwidth, "intra_bandwidth"), _seconds(self.intra_latency, "intra_latency"))

    @property
    def compute_device(self) -> Device:
        if isinstance(self.device, Device):
            return Device(self.device.name, self.device.peak_flops, self.efficiency)
        return Device(self.device, DEVICES[self.device][0], self.efficiency)


def _bandwidth(value, name) -> float:
    return validate.positive(value, name) if isinstance(value, (int, float)) else parse_bandwidth(value, name)


def _seconds(value, name) -> float:
    return validate.number(value, name, 0.0) if isinstance(value, (int, float)) else parse_time(value, name)


@dataclass
class ScalingEstimate:
    """One data-parallel step on a cluster and its weak-scaling efficiency, as ``predict`` (closed form) or
    ``measure`` (real ranks) answers it."""
    step_s: float
    single_s: float                  # one device alone: compute + optimizer, no communication
    compute_s: float                 # forward + backward + optimizer (the compute of one step)
    comm_s: float                    # every bucket's collective and codec, back to back
    exposed_s: float                 # the part of comm_s the backward pass does not hide
    buckets: int
    wire_bytes: float                # bytes one rank's collectives carry per step (payload, not protocol)
    link_Bps: float                  # the effective per-flow bandwidth on the ring's slowest hop
    ranks: int
    method: str = "closed form (alpha-beta)"
    setup: dict = field(default_factory=dict)
    trains: bool = True              # does the compression train like fp32 (``trains``)?
    accuracy: str = ""               # why not, if it does not

    @property
    def efficiency(self) -> float:
        return self.single_s / self.step_s


@functools.lru_cache(maxsize=None)
def payload_ratio(method: str) -> tuple[float, bool]:
    """(payload bytes / fp32 bytes, summable) of a compressor, measured on a real gradient-like tensor
    (in a notebook kernel without torch, on one rank of the pool: ``runtime.launch.where_torch_is``)."""
    validate.choice(method, "compression", COMPRESSION)
    if method == "none":
        return 1.0, True
    from ..runtime import launch
    return launch.where_torch_is(_measure_payload_ratio, method)


def _measure_payload_ratio(method: str) -> tuple[float, bool]:
    import torch
    x = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    comp = compress.make_compressor(method)
    payload = comp.compress(x, 10**6, None)
    return payload.nbytes / (4 * x.numel()), bool(comp.summable)


# -- accuracy: does the compression train? (chapter 4's runs) -------------------------------------------------
ACCURACY_POINTS = 0.02       # "trains": final test accuracy at most 2 points below fp32's, and no divergence
ACCURACY_RUN = dict(ranks=4, steps=300)      # chapter 4's full-size training (the MLP, plain SGD, lr 0.1, seed 0)
TRAINS = {  # (compression, error feedback) -> trained like fp32 in ACCURACY_RUN (measure_trains reruns each)
    ("none", False): True, ("none", True): True,
    ("fp16", False): True, ("fp16", True): True, ("bf16", False): True, ("bf16", True): True,
    ("int8", False): True, ("int8", True): True,
    ("qsgd", False): True, ("qsgd", True): True, ("terngrad", False): True, ("terngrad", True): True,
    ("sign", False): False, ("sign", True): True, ("topk", False): False, ("topk", True): True,
    ("randomk", False): False, ("randomk", True): False,
}
WHY_NOT = {
    ("sign", False): "scaled sign is biased: without error feedback it trains well below fp32 (chapter 4, section 4)",
    ("topk", False): "top-k is biased: without error feedback the small elements are never applied and it trains "
                     "well below fp32 (chapter 4, section 2)",
    ("randomk", False): "random-k at 1 % rescaled by d/k diverged in chapter 4's training",
    ("randomk", True): "random-k with error feedback diverged in chapter 4 (error feedback needs a contractive "
                       "compressor)",
}


def trains(compression: str, error_feedback: bool, ranks: int) -> tuple[bool, str]:
    """(does this compression train like fp32 on `ranks` ranks, why not): chapter 4's verdict, and int8's levels."""
    validate.choice(compression, "compression", COMPRESSION)
    if compression == "int8" and 127 // ranks < 1:
        return False, (f"int8 with one shared scale keeps {ranks} x levels <= 127 so that no sum overflows "
                       f"(chapter 4, section 1): on {ranks} ranks that leaves 127 // {ranks} = 0 levels")
    ok = TRAINS[(compression, bool(error_feedback))]
    return ok, "" if ok else WHY_NOT[(compression, bool(error_feedback))]


@functools.lru_cache(maxsize=None)
def _final_accuracy(compression: str, error_feedback: bool) -> tuple[float, int | None]:
    from ..compress.training import run_training
    r = run_training(compression, error_feedback=error_feedback and compression != "none", **ACCURACY_RUN)
    return r.final_accuracy, r.diverged


def measure_trains(compression: str, error_feedback: bool) -> bool:
    """Rerun chapter 4's training for one entry of ``TRAINS``: True if it trains like fp32 (real ranks, minutes)."""
    validate.choice(compression, "compression", COMPRESSION)
    fp32, _ = _final_accuracy("none", False)
    accuracy, diverged = _final_accuracy(compression, bool(error_feedback))
    return diverged is None and accuracy >= fp32 - ACCURACY_POINTS


def effective_link(cluster: ClusterSpec, algo: str, placement: str) -> Link:
    """The bandwidth one ring flow gets on its slowest hop, and the NIC's latency (see the module's text)."""
    nic, g, n = cluster.nic, cluster.devices_per_node, cluster.nodes
    racks = math.ceil(n / cluster.hosts_per_rack) if cluster.topology == "leaf-spine" else 1
    over = cluster.oversubscription if racks > 1 else 1.0
    if n == 1:                                              # everything inside the node
        return cluster.intra
    if algo in ("tree", "halving_doubling"):               # partners p/2, p/4, ... apart: off-node and
        placement = "scattered"                             # across racks at once, whatever the placement
    sharing = 1 if (algo == "hierarchical" or placement == "packed") else g      # flows per NIC
    if placement == "packed":                               # one flow leaves each rack: its uplinks
        uplink = cluster.hosts_per_rack * nic.bandwidth / over
        bw = min(nic.bandwidth / sharing, uplink)
    else:                                                   # (R-1)/R of a rack's flows cross the spine
        crossing = over * (racks - 1) / racks
        bw = nic.bandwidth / sharing / max(1.0, crossing)
    if g > 1 and algo != "hierarchical" and placement == "packed":
        bw = min(bw, cluster.intra.bandwidth)               # the ring's intra-node hops, if slower
    return Link(bw, nic.latency)


def _collective_s(cluster: ClusterSpec, algo: str, link: Link, nbytes: float, summable: bool) -> float:
    p = cluster.ranks
    if p == 1:
        return 0.0
    if algo == "hierarchical" and cluster.devices_per_node > 1 and cluster.nodes > 1:
        net = Network(link, cluster.devices_per_node, cluster.intra)
        if summable:
            return cost.time("allreduce", "hierarchical", p, nbytes, network=net)
        # all-gather inside the node, then across nodes (each node's g payloads), then nothing to reduce
        return (cost.time("allgather", "ring", cluster.devices_per_node, cluster.devices_per_node * nbytes,
                          network=Network(cluster.intra))
                + cost.time("allgather", "ring", cluster.nodes, p * nbytes, network=Network(link)))
    net = Network(link)
    if summable:
        return cost.time("allreduce", "ring" if algo == "hierarchical" else algo, p, nbytes, network=net)
    return cost.time("allgather", "ring", p, p * nbytes, network=net)


def predict(model: Model, cluster: ClusterSpec, *, algo: str = "ring", compression: str = "none", bucket="25MiB",
            placement: str = "packed", overlap: bool = True, error_feedback: bool = False) -> ScalingEstimate:
    """The closed-form step and efficiency of `model` on `cluster` with these choices, and whether the
    compression trains (``trains``; error feedback changes accuracy, not bytes)."""
    validate.choice(algo, "algo", ALGOS)
    validate.choice(placement, "placement", PLACEMENTS)
    validate.flag(error_feedback, "error_feedback")
    ratio, summable = payload_ratio(compression)
    ok, why = trains(compression, error_feedback, cluster.ranks)
    cap = parse_bytes(bucket, "bucket") if isinstance(bucket, str) else validate.whole(bucket, "bucket", 1)
    total = model.grad_bytes
    count = math.ceil(total / cap)
    validate.too_big("bucket", count, 1e6, "buckets per step")
    dev = cluster.compute_device
    compute = dev.seconds(model.flops_per_sample * model.batch)
    optimizer = dev.seconds(2 * model.params)                   # plain SGD: one multiply-add per parameter
    single = compute + optimizer
    p = cluster.ranks
    link = effective_link(cluster, algo, placement)
    setup = dict(algo=algo, compression=compression, bucket_bytes=cap, placement=placement, overlap=overlap,
                 error_feedback=error_feedback, model=model.name, nodes=cluster.nodes,
                 devices_per_node=cluster.devices_per_node)
    if p == 1:
        return ScalingEstimate(step_s=single, single_s=single, compute_s=single, comm_s=0.0, exposed_s=0.0, buckets=0,
                               wire_bytes=0.0, link_Bps=link.bandwidth, ranks=1, setup=setup, trains=ok, accuracy=why)
    forward = compute / 3
    enc, dec = (0.0, 0.0) if compression == "none" else flops_per_element(compression, True)
    decodes = 1 if summable else p

    def bucket_s(nbytes):
        elements = nbytes / 4
        codec = dev.seconds((enc + decodes * dec) * elements)
        return codec + _collective_s(cluster, algo, link=link, nbytes=nbytes * ratio, summable=summable)

    full, last = bucket_s(cap) if count > 1 else 0.0, bucket_s(total - cap * (count - 1))
    end = comm = 0.0
    for k in range(count):
        size = cap if k < count - 1 else total - cap * (count - 1)
        ready = forward + (compute - forward) * min(1.0, (k * cap + size) / total) if overlap else compute
        t = full if k < count - 1 else last
        end = max(ready, end) + t
        comm += t
    finish = max(compute, end)
    sent = (2 * (p - 1) / p if summable else (p - 1)) * total * ratio
    return ScalingEstimate(step_s=finish + optimizer, single_s=single, compute_s=single, comm_s=comm,
                           exposed_s=finish - compute, buckets=count, wire_bytes=sent, link_Bps=link.bandwidth, ranks=p,
                           setup=setup, trains=ok, accuracy=why)


# -- the published check: Horovod's 512-GPU benchmark ----------------------------------------------------------
# horovod/horovod docs/benchmarks.rst: "128 servers with 4 Pascal GPUs each connected by RoCE-capable
# 25 Gbit/s network. Horovod achieves 90% scaling efficiency for both Inception V3 and ResNet-101, and 68%
# scaling efficiency for VGG-16." Batch 64 per GPU is the page's reproduction command (tf_cnn_benchmarks).
HOROVOD_EFFICIENCY = 0.90
RESNET101 = Model(name="ResNet-101", params=44.5e6,          # torchvision model card: 44.5M parameters,
                  flops_per_sample=3 * 2 * 7.8e9, batch=64)  # 7.8 G multiply-adds forward; x2 FLOPs, x3 training
HOROVOD_CLUSTER = ClusterSpec(nodes=128, devices_per_node=4, nic_bandwidth="25Gbit/s", nic_latency="5us",
                          intra_bandwidth="15.75GB/s", intra_latency="1us", device=P100, efficiency=0.5)
# Horovod's default tensor-fusion buffer is 64 MB; one ring over every GPU is this model's choice
HOROVOD_CHOICES = dict(algo="ring", compression="none", bucket="64MB", placement="packed", overlap=True)


def horovod() -> ScalingEstimate:
    """The capstone's prediction for Horovod's published ResNet-101 run (512 GPUs)."""
    return predict(RESNET101, HOROVOD_CLUSTER, **HOROVOD_CHOICES)


# -- real ranks, for what fits on this machine --------------------------------------------------------------------
def mlp(*, width: int = 256, layers: int = 4, batch: int = 128) -> Model:
    """The lab's MLP as a capstone Model (FLOPs counted on a real pass, ``dataparallel.train.step_flops``)."""
    from ..dataparallel import train
    return Model(name=f"MLP width {width} x {layers}", params=train.parameter_count(width, layers),
                 flops_per_sample=train.step_flops(width, layers, batch) / batch, batch=batch)


def measure(*, nodes: int, bandwidth="10Gbit/s", latency="50us", bucket=300_000, overlap: bool = True,
            width: int = 256, layers: int = 4, batch: int = 128) -> ScalingEstimate:
    """The same question answered on real ranks (``dataparallel.step.measure_step``): one CPU rank per node, the MLP."""
    from ..dataparallel import train
    from ..dataparallel.step import measure_step
    r = measure_step(ranks=nodes, bandwidth=bandwidth, latency=latency, bucket=bucket, overlap=overlap,
                     width=width, layers=layers, batch=batch)
    s = r.setup
    cap = s["bucket_bytes"]
    return ScalingEstimate(step_s=r.total_s, single_s=r.compute_s, compute_s=r.compute_s, comm_s=r.comm_s,
                           exposed_s=s["exposed_comm_s"], buckets=len(s["buckets"]),
                           wire_bytes=2 * (nodes - 1) / nodes * r.grad_bytes, link_Bps=s["bandwidth_Bps"], ranks=nodes,
                           method="real ranks (measure_step)",
                           setup=dict(bucket_bytes=cap, overlap=overlap, model=f"MLP width {width} x {layers}",
                                      params=train.parameter_count(width, layers)))


def small_cluster(nodes: int, *, bandwidth="10Gbit/s", latency="50us") -> ClusterSpec:
    """The cluster ``measure`` runs: one cpu-core rank per node on one switch (measure_step's network)."""
    return ClusterSpec(nodes=nodes, nic_bandwidth=bandwidth, nic_latency=latency, device="cpu-core", efficiency=0.5)
