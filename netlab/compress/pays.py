"""When compression pays: the step time of each method across bandwidths, and where it crosses fp32.

A compressed step costs   compute (forward + backward + optimizer, FLOPs on the device preset)
                        + encode and decode (per-element model or measured, on the device: ``codec_cost``)
                        + communication of the compressed bytes (the emulated network).
Compression removes bytes but adds encode/decode compute, and an all-gather (top-k, sign, QSGD)
grows with the number of ranks where an all-reduce does not. On a slow link the bytes dominate and
compression wins; on a fast link the codec dominates and fp32 wins (Agarwal et al., MLSys 2022:
compression beat tuned synchronous training in 6 of 200+ setups).

``step_times`` measures one real training step per method on real ranks for each bandwidth (one
``netlab.run`` per bandwidth; every method's step inside it starts from a fresh clock after a
barrier, on the same real gradient). ``crossover`` finds where a method's curve crosses the
baseline's: between two measured bandwidths the step time is a + b/B (every message costs
alpha + n/B on an uncontended network), so the crossing is solved exactly on that segment;
``crossover_table`` lists it per method with the speedup on the slowest link and the codec's speed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from .. import data, validate
from ..dataparallel import train
from ..runtime import launch, pool
from ..net.network import network as make_network
from ..net.presets import Device, device as make_device
from . import check_method, make
from .methods import SyncConfig
from .codec_cost import DEFAULT_CODEC, check_codec, codec_seconds, label

LATE_STEP = 10**6            # the step index timed: past any warm-up (DGC's density schedule)
BANDWIDTHS = ["100Mbit/s", "400Mbit/s", "1Gbit/s", "4Gbit/s", "10Gbit/s", "25Gbit/s", "40Gbit/s",
              "100Gbit/s", "200Gbit/s", "400Gbit/s"]


def _spec(item) -> tuple[str, dict, bool]:
    """'topk' or ('topk', {'ratio': 0.01}) or ('topk', {...}, error_feedback) -> (name, options, ef)."""
    if isinstance(item, str):
        return check_method(item), {}, item != "none"
    name, options, *rest = item
    return check_method(name), dict(options), bool(rest[0]) if rest else name != "none"


def one_step_each(comm, specs, width, layers, *, batch, seed=0):
    """Rank function: one training step per spec, each from a fresh clock; (clock, bytes) per spec."""
    model = train.make_model(width, layers, seed)
    x, y = data.load("train")
    idx = train.batch_indices(0, comm.rank, comm.world_size, batch, n=len(y), seed=seed)
    flops = train.step_flops(width, layers, batch)
    train.local_step(comm, model, x, y, idx=idx, global_batch=comm.world_size * batch, flops=flops)
    grad = train.flat_grad(model)                   # the same real gradient for every method
    shapes = [tuple(p.shape) for p in model.parameters()]
    out = []
    for name, options, ef, encode_s, decode_s in specs:
        sync = make(SyncConfig(method=name, error_feedback=ef, shapes=shapes, world_size=comm.world_size,
                               comm_rank=comm.rank, seed=seed, encode_s=encode_s, decode_s=decode_s, **options))
        dist.barrier(group=comm.group)              # every rank done with the previous method
        comm.restart_clock()
        sent = comm.bytes_sent
        comm.compute_for(flops=flops, label="forward+backward")
        summed = sync.sync(comm, grad.clone(), LATE_STEP)
        comm.compute_for(flops=2 * grad.numel(), label="optimizer")          # plain SGD, as sgd_update
        out.append({"clock": comm.now(), "wire_bytes": comm.bytes_sent - sent, "payload_bytes": sync.payload_bytes,
                    "communicator": sync.communicator, "finite": bool(torch.isfinite(summed).all())})
    return out


@dataclass(frozen=True, kw_only=True)
class SweepSetup:
    """Where ``step_times`` runs each step: the ranks, the model, the latency, the device, the codec cost.

    Frozen, checked when built (one ValueError naming the field); the bandwidths are the sweep's axis,
    given beside it."""
    ranks: int = 4
    width: int = 128
    layers: int = 2
    batch: int = 32
    latency: object = "5us"
    device: str | Device = "cpu-core"
    efficiency: float = 0.5
    codec: str = DEFAULT_CODEC

    def __post_init__(self):
        pool.check_ranks(self.ranks)
        train.check_model(self.width, self.layers)
        check_codec(self.codec)


def step_times(methods, bandwidths=BANDWIDTHS, setup: SweepSetup | None = None, *, progress: bool = False,
               **settings) -> list[dict]:
    """One row per (method, bandwidth): step time and its parts, measured on real ranks.

    `setup`: a ``SweepSetup``, or its fields as keywords (ranks, width, layers, batch, latency, device,
    efficiency, codec)."""
    from tqdm.auto import tqdm
    cfg = validate.config(SweepSetup, setup, settings)
    ranks, width, layers, batch, latency, codec = cfg.ranks, cfg.width, cfg.layers, cfg.batch, cfg.latency, cfg.codec
    device, efficiency = cfg.device, cfg.efficiency
    dev = device if isinstance(device, Device) else make_device(device, efficiency)
    specs = []
    for item in methods:
        name, options, ef = _spec(item)
        enc, dec = codec_seconds(name, ranks, width, layers, batch=batch, device=dev, error_feedback=ef, codec=codec,
                                 **options)
        specs.append((name, options, ef, enc, dec))
    nets = [(bw, make_network(bw, latency)) for bw in bandwidths]     # bad input fails before any run
    flops = train.step_flops(width, layers, batch)
    compute_s = dev.seconds(flops) + dev.seconds(2 * train.parameter_count(width, layers))
    rows = []
    for bw, net in tqdm(nets, desc="bandwidths", disable=not progress):
        res = launch.run(one_step_each, ranks=ranks, network=net, device=dev, timeout=120, specs=specs,
                          width=width, layers=layers, batch=batch)
        for i, (name, options, ef, enc, dec) in enumerate(specs):
            step = max(v[i]["clock"] for v in res.values)
            gathered = res.values[0][i]["communicator"] == "allgather"      # decodes one payload per rank
            codec_s = enc + dec * (ranks if gathered else 1)
            rows.append({"method": name, "label": label(name, options), "options": options,
                         "error_feedback": ef, "bandwidth": bw, "bandwidth_Bps": net.nic.bandwidth,
                         "communicator": res.values[0][i]["communicator"], "ranks": ranks, "step_s": step,
                         "compute_s": compute_s, "codec_s": codec_s, "codec": codec,
                         "comm_s": step - compute_s - codec_s,
                         "wire_bytes": sum(v[i]["wire_bytes"] for v in res.values) / ranks,
                         "dense_bytes": 4 * train.parameter_count(width, layers),
                         "payload_bytes": res.values[0][i]["payload_bytes"]})
    return rows


def crossover(rows: list[dict], method_label: str, baseline_label: str = "none") -> float | None:
    """Bandwidth (bytes/s) above which `method_label` stops beating the baseline; None if no crossing.

    Solved on the measured segment where the sign flips, with t = a + b/B on that segment.
    """
    mine = sorted((r["bandwidth_Bps"], r["step_s"]) for r in rows if r["label"] == method_label)
    base = dict((r["bandwidth_Bps"], r["step_s"]) for r in rows if r["label"] == baseline_label)
    if not mine or not base:
        raise ValueError(f"method_label: no rows for {method_label!r} and {baseline_label!r}")
    diff = [(1 / bw, t - base[bw]) for bw, t in mine if bw in base]    # (u = 1/B, method - baseline)
    for (u1, d1), (u2, d2) in zip(diff, diff[1:]):
        if d1 == 0:
            return 1 / u1
        if (d1 < 0) != (d2 < 0):
            u = u1 + d1 * (u2 - u1) / (d1 - d2)                        # linear in u on the segment
            return 1 / u
    return None


def allgather_crossover(dense_bytes: float, payload_bytes: float, ranks: int, latency_s: float,
                        *, codec_s: float) -> float:
    """The closed form of where an all-gathered compressor stops beating a ring all-reduce (bytes/s).

        fp32 ring all-reduce   C + 2(p-1) alpha + 2(p-1)/p n / B
        compressed all-gather  C + codec + (p-1) alpha + (p-1) n_c / B

    equal at B* = (2(p-1)/p n - (p-1) n_c) / (codec - (p-1) alpha); infinite when the codec costs
    less than the latency it saves (then compression wins at every bandwidth).
    """
    p = ranks
    saved = 2 * (p - 1) / p * dense_bytes - (p - 1) * payload_bytes     # bytes per rank per step
    cost = codec_s - (p - 1) * latency_s                                # seconds per step
    return math.inf if cost <= 0 else saved / cost


def rule_crossover(dense_bytes: float, payload_bytes: float, ranks: int, communicator: str, *,
                   codec_s: float) -> float:
    """The rule of thumb for the crossover (bytes/s): B* = s x (codec throughput), latencies neglected.

    The codec throughput is the fp32 gradient's bytes over the codec's seconds per step; s is what the method
    saves of the fp32 ring's bytes per rank, in gradients: 2(p-1)/p (1 - n_c/n) for a payload that is
    all-reduced (the ring carries n_c instead of n), 2(p-1)/p - (p-1) n_c/n for one that is all-gathered
    (each rank receives p - 1 payloads). With alpha = 0 it equals ``allgather_crossover`` for the latter.
    """
    p, share = ranks, payload_bytes / dense_bytes
    saved = 2 * (p - 1) / p * (1 - share) if communicator == "allreduce" else 2 * (p - 1) / p - (p - 1) * share
    return math.inf if codec_s <= 0 else saved * dense_bytes / codec_s


def bandwidth_label(bps: float | None) -> str:
    if bps is None or math.isnan(bps):
        return "none in range"
    return f"{bps * 8 / 1e9:.3g} Gbit/s"


__all__ = ["BANDWIDTHS", "step_times", "crossover", "crossover_table", "allgather_crossover", "rule_crossover",
           "bandwidth_label",
           "one_step_each"]


def crossover_table(rows, baseline_label: str = "none") -> list[dict]:
    """Per method: its speedup at the slowest link, how fast its codec processes the fp32 gradient
    (dense bytes / codec seconds, in Gbit/s to compare with links), the rule of thumb's crossover
    (``rule_crossover``) and the measured bandwidth above which it stops beating fp32."""
    out = []
    slowest = min(r["bandwidth_Bps"] for r in rows)
    base = {r["bandwidth_Bps"]: r["step_s"] for r in rows if r["label"] == baseline_label}
    for lab in dict.fromkeys(r["label"] for r in rows):
        if lab == baseline_label:
            continue
        low = next(r for r in rows if r["label"] == lab and r["bandwidth_Bps"] == slowest)
        cross = crossover(rows, lab, baseline_label)
        out.append({"method": lab, "payload_bytes": low["payload_bytes"],
                    f"speedup at {low['bandwidth']}": base[slowest] / low["step_s"],
                    "codec Gbit/s": low["dense_bytes"] * 8 / 1e9 / low["codec_s"] if low["codec_s"] else float("inf"),
                    "rule": bandwidth_label(rule_crossover(low["dense_bytes"], low["payload_bytes"], low["ranks"],
                                                           low["communicator"], codec_s=low["codec_s"])),
                    "pays below": bandwidth_label(cross) if cross else
                    ("always (in range)" if low["step_s"] < base[slowest] else "never (in range)")})
    return out
