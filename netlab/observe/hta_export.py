"""netlab traces out and back in: HTA's per-rank files, Perfetto counter tracks, and loading a saved trace.

* ``hta_export``: one Kineto-flavoured trace file per rank, as PyTorch's profiler writes them and
  Meta's Holistic Trace Analysis (``holistictraceanalysis``) reads them: a top-level
  ``distributedInfo`` ({backend, rank, world_size, pg_config}), a ``ProfilerStep#1`` annotation on
  the CPU thread, a ``cudaLaunchKernel`` per kernel, and the "GPU kernels" themselves
  (``cat: kernel``, ``args.stream``): compute on stream 7, each collective as an
  ``ncclKernel_<Collective>`` on stream 13 (HTA classifies kernels by name: ``^nccl.*Kernel`` is
  communication, anything else computation). Times are microseconds, as Kineto writes them; HTA
  rounds them to whole microseconds, so compare on steps of many milliseconds.
* ``with_counters``: the Chrome/Perfetto JSON of ``Trace.to_chrome`` plus counter tracks
  (``ph: "C"``) of each rank's NIC utilisation, outgoing and incoming, over time.
* ``load``: read back a trace saved by ``Trace.save`` (virtual or wall clock), checking that it is
  a netlab trace and that no rank is missing.
"""
from __future__ import annotations

import json
import os

from .analysis import COLLECTIVES, is_collective, link_utilisation
from ..runtime.comm import Event
from ..runtime.trace import Trace

_COMPUTE_STREAM, _COMM_STREAM = 7, 13
_KINDS = ("send", "recv", "compute", "region")


def _kernel_name(e: Event) -> str:
    if e.kind == "region":                                     # "allreduce:ring" -> ncclKernel_AllReduce_ring
        coll, _, algo = e.label.partition(":")
        return f"ncclKernel_{''.join(w.capitalize() for w in coll.split('_'))}_{algo or 'netlab'}"
    return e.label or "compute"


def hta_rank_trace(trace: Trace, rank: int) -> dict:
    """One rank's trace in the shape HTA loads (see the module docstring)."""
    ws = trace.world_size
    kernels = [e for e in trace.of(rank, "compute") if e.end > e.start]
    kernels += [e for e in trace.of(rank, "region") if is_collective(e.label) and e.end > e.start]
    kernels.sort(key=lambda e: e.start)
    events = [{"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank} host"}},
              {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": f"rank {rank} device"}}]
    t0 = min((e.start for e in kernels), default=0.0)
    t1 = max((e.end for e in kernels), default=0.0)
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": rank, "tid": 1,
                   "ts": t0 * 1e6, "dur": (t1 - t0) * 1e6, "args": {"External id": 1}})
    for k, e in enumerate(kernels, start=2):
        stream = _COMM_STREAM if e.kind == "region" else _COMPUTE_STREAM
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": rank, "tid": 1,
                       "ts": e.start * 1e6, "dur": 0.0, "args": {"correlation": k, "External id": k}})
        args = {"stream": stream, "device": 0, "correlation": k, "External id": k, "label": e.label}
        if e.kind == "region":
            args.update({"Collective name": e.label.partition(":")[0], "Group size": ws,
                         "Process Group Ranks": list(range(ws))})
        events.append({"ph": "X", "cat": "kernel", "name": _kernel_name(e), "pid": 0, "tid": stream,
                       "ts": e.start * 1e6, "dur": (e.end - e.start) * 1e6, "args": args})
    info = {"backend": "gloo", "rank": rank, "world_size": ws, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
                           "pg_size": ws, "ranks": list(range(ws))}]}
    return {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": info, "traceEvents": events,
            "traceName": f"netlab rank {rank}", "displayTimeUnit": "ms", "baseTimeNanoseconds": 0,
            "otherData": {"clock": "virtual" if trace.virtual else "wall"}}


def hta_export(trace: Trace, directory: str) -> dict[int, str]:
    """Write ``rank_<r>.json`` for every rank into `directory`; returns {rank: path} for HTA's ``trace_files``."""
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for r in range(trace.world_size):
        paths[r] = os.path.join(directory, f"rank_{r}.json")
        with open(paths[r], "w") as f:
            json.dump(hta_rank_trace(trace, r), f)
    return paths


def with_counters(trace: Trace, bins: int = 100) -> dict:
    """Chrome/Perfetto JSON with counter tracks "NIC utilisation" (0-1, out and in) per rank."""
    out = trace.to_chrome()
    util = link_utilisation(trace, bins)
    edges = util["edges_s"]
    for r, per in util["ranks"].items():
        for k in range(bins):
            out["traceEvents"].append({"ph": "C", "name": "NIC utilisation", "pid": r, "ts": edges[k] * 1e6,
                                       "args": {"out": per["out"][k], "in": per["in"][k]}})
        out["traceEvents"].append({"ph": "C", "name": "NIC utilisation", "pid": r, "ts": edges[-1] * 1e6,
                                   "args": {"out": 0.0, "in": 0.0}})
    return out


def load(path: str) -> Trace:
    """A Trace from the JSON ``Trace.save`` wrote; ValueError naming the problem if it is not one."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"trace: no such file {path!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError(f"trace: {path!r} is not JSON (expected a trace written by netlab --trace)") from None
    other = doc.get("otherData") if isinstance(doc, dict) else None
    if not isinstance(other, dict) or other.get("clock") not in ("virtual", "wall") \
            or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"trace: {path!r} is not a netlab trace (no traceEvents with otherData.clock)")
    events, named = [], set()
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "M" and ev.get("name") == "process_name":
            named.add(ev.get("pid"))
        if ev.get("ph") != "X" or ev.get("cat") not in _KINDS:
            continue
        a = ev.get("args", {})
        events.append(Event(rank=int(ev["pid"]), kind=ev["cat"], peer=int(a.get("peer", -1)),
                            bytes=int(a.get("bytes", 0)), start=ev["ts"] / 1e6, end=(ev["ts"] + ev["dur"]) / 1e6,
                            label=a.get("label", "")))
    ranks = {e.rank for e in events} | {p for p in named if isinstance(p, int)}
    world = int(other.get("world_size", max(ranks, default=-1) + 1))
    missing = sorted(set(range(world)) - {e.rank for e in events})
    if not events:
        raise ValueError(f"trace: {path!r} has no events")
    if missing:
        raise ValueError(f"trace: rank {missing[0]} is missing from {path!r} ({world} ranks expected)")
    clocks = other.get("clocks") or [max((e.end for e in events if e.rank == r), default=0.0) for r in range(world)]
    counters: dict[str, dict] = {}                    # the fabric's tracks ("C" events of the process after the ranks)
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "C" and ev.get("pid") == world and len(ev.get("args") or {}) == 1:
            (unit, v), = ev["args"].items()
            c = counters.setdefault(ev["name"], {"track": ev["name"], "unit": unit, "t": [], "v": []})
            c["t"].append(ev["ts"] / 1e6)
            c["v"].append(v)
    return Trace(events, [float(c) for c in clocks], other["clock"] == "virtual", counters=list(counters.values()))


__all__ = ["hta_export", "hta_rank_trace", "with_counters", "load", "COLLECTIVES"]
