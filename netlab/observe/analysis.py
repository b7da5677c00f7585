"""Where a step's time goes, read from a netlab trace: breakdown, overlap, straggler, critical path, links.

Definitions follow Meta's Holistic Trace Analysis (HTA, ``breakdown_analysis.py`` and
``communication_analysis.py``), with a rank's "kernels" being its compute events and its
collectives (the ``collective:algo`` regions the collectives record, or, in a trace without them,
its messages):

* span: from the rank's first kernel start to its last kernel end (HTA's "kernel time");
* compute: the union of compute intervals; idle: the span not covered by any kernel;
* exposed communication: span - compute - idle (HTA's "non-compute" time): communication that
  no computation hides;
* overlap fraction: (time computing while communicating) / (time communicating), HTA's
  comm/comp overlap ratio.
* straggler (HTA's ``get_potential_stragglers``): of the collectives lasting at least 1 % of the step,
  the one whose duration varies most across ranks; the rank that enters it last. It shows the
  *shortest* collective, because the others wait for it inside theirs.
* critical path: from the step's end backwards, the kernel that ended it; a collective hands the
  path to the rank that entered it last (everyone waited for that rank), a compute keeps the rank.
* link utilisation: each rank's NIC port busy fraction per time bin, outgoing (sends) and incoming
  (receives), from the port occupancy the network model booked (alpha + n/B per message).
* peer links: per directed pair of ranks, messages, bytes and the port time they took, hence the
  link's bandwidth and the share of that time spent on latency (alpha) rather than bytes: the
  evidence for a slow NIC, an oversubscribed spine or buckets too small (``netlab.observe.scenarios``).

* pauses: on a congestion fabric with PFC (``netlab.cosim.live``), per port that was ever paused,
  how long and how often, and who paused it: a switch port toward a host is paused by that host's
  NIC, a host's NIC by the switch (its ingress counter crossed Xoff). A storm shows as a switch port
  paused by its host, and the NICs that feed that port paused by the switch (``netlab.observe.scenarios``).

Works on virtual-time and wall-clock traces alike (``Trace.virtual``). Left out: queue and drop
statistics beyond the fabric's own counter tracks, and HTA's idle-time sub-categories.
"""
from __future__ import annotations

from .. import validate
from ..runtime.trace import Trace, _union

COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall")


def is_collective(label: str) -> bool:
    return label.split(":", 1)[0] in COLLECTIVES


def _merge(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _intersection(a, b) -> float:
    """Length of the intersection of two unions of intervals."""
    a, b, i, j, total = _merge(a), _merge(b), 0, 0, 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def kernels(trace: Trace, rank: int) -> tuple[list, list]:
    """(compute intervals, communication intervals) of one rank, in seconds."""
    compute = [(e.start, e.end) for e in trace.of(rank, "compute") if e.end > e.start]
    comm = [(e.start, e.end) for e in trace.of(rank, "region") if is_collective(e.label) and e.end > e.start]
    if not comm:                                          # a trace without collective regions: its messages
        comm = [(e.start, e.end) for e in trace.events if e.rank == rank and e.kind in ("send", "recv")]
    return compute, comm


def breakdown(trace: Trace) -> list[dict]:
    """Per rank: span, compute, exposed communication, idle (seconds), communication and overlap fraction."""
    rows = []
    for r in range(trace.world_size):
        compute, comm = kernels(trace, r)
        every = compute + comm
        if not every:
            rows.append({"rank": r, "span_s": 0.0, "compute_s": 0.0, "comm_s": 0.0, "exposed_comm_s": 0.0,
                         "idle_s": 0.0, "overlap_s": 0.0, "overlap_frac": 0.0})
            continue
        span = max(e for _, e in every) - min(s for s, _ in every)
        busy, comp, comm_t = _union(every), _union(compute), _union(comm)
        both = _intersection(compute, comm)
        rows.append({"rank": r, "span_s": span, "compute_s": comp, "comm_s": comm_t,
                     "exposed_comm_s": busy - comp, "idle_s": span - busy, "overlap_s": both,
                     "overlap_frac": both / comm_t if comm_t > 0 else 0.0})
    return rows


def collectives_of(trace: Trace, rank: int) -> list:
    """A rank's collective regions in program order (the k-th is the same collective on every rank)."""
    return sorted((e for e in trace.of(rank, "region") if is_collective(e.label)), key=lambda e: (e.start, e.end))


def straggler(trace: Trace, min_share: float = 0.01) -> dict:
    """HTA's rule: among collectives lasting at least `min_share` of the step on average, take the one whose
    duration varies most across ranks; the straggler is the rank that enters it last (and waits least)."""
    per_rank = [collectives_of(trace, r) for r in range(trace.world_size)]
    count = min((len(c) for c in per_rank), default=0)
    best, spread = None, 0.0
    for k in range(count):
        durations = [c[k].end - c[k].start for c in per_rank]
        mean = sum(durations) / len(durations)
        std = (sum((d - mean) ** 2 for d in durations) / len(durations)) ** 0.5
        if mean >= min_share * trace.makespan and std > max(spread, 1e-3 * mean):   # under 0.1 %: rounding, not a late rank
            best, spread = k, std
    if best is None:                                    # every rank spent the same time in every collective
        return {"rank": None, "lag_s": 0.0, "collective": None, "starts_s": {}, "durations_s": {}}
    starts = {r: c[best].start for r, c in enumerate(per_rank)}
    rank = max(starts, key=lambda r: (starts[r], -r))
    return {"rank": rank, "lag_s": starts[rank] - min(starts.values()), "collective": best, "starts_s": starts,
            "durations_s": {r: c[best].end - c[best].start for r, c in enumerate(per_rank)}}


def critical_path(trace: Trace, eps: float = 1e-12) -> list[dict]:
    """Segments (rank, kind, label, start, end) from the step's start to its end that decided its length."""
    kernels_of = {r: sorted([e for e in trace.of(r, "compute")] + collectives_of(trace, r), key=lambda e: e.end)
                  for r in range(trace.world_size)}
    index = {r: {id(e): k for k, e in enumerate(collectives_of(trace, r))} for r in kernels_of}
    live = [r for r in kernels_of if kernels_of[r]]
    if not live:
        return []
    rank = max(live, key=lambda r: kernels_of[r][-1].end)
    t = kernels_of[rank][-1].end
    path = []
    while True:
        done = [e for e in kernels_of[rank] if e.end <= t + eps and e.end > e.start]
        if not done:
            break
        ev = max(done, key=lambda e: (e.end, e.kind == "region"))
        path.append({"rank": rank, "kind": "comm" if ev.kind == "region" else "compute", "label": ev.label,
                     "start_s": ev.start, "end_s": ev.end})
        t = ev.start
        if ev.kind == "region":                       # everyone waited for the last rank to enter it
            k = index[rank][id(ev)]
            entries = {r: collectives_of(trace, r)[k] for r in kernels_of if len(collectives_of(trace, r)) > k}
            late = max(entries, key=lambda r: (entries[r].start, r == rank))
            rank, t = late, entries[late].start
    return path[::-1]


def link_utilisation(trace: Trace, bins: int = 50) -> dict:
    """Per rank and direction, the NIC's busy fraction in `bins` equal slices of [0, makespan]."""
    end = trace.makespan or max((e.end for e in trace.events), default=0.0)
    width = end / bins if end > 0 else 1.0
    edges = [k * width for k in range(bins + 1)]
    out = {"edges_s": edges, "ranks": {}}
    for r in range(trace.world_size):
        per = {}
        for kind, name in (("send", "out"), ("recv", "in")):
            busy = [0.0] * bins
            for s, e in _merge((ev.start, ev.end) for ev in trace.of(r, kind)):
                for k in range(max(0, int(s // width)), min(bins, int(e // width) + 1)):
                    busy[k] += max(0.0, min(e, edges[k + 1]) - max(s, edges[k]))
            per[name] = [b / width for b in busy]
        per["bytes_out"] = sum(ev.bytes for ev in trace.of(r, "send"))
        per["mean_out"] = sum(per["out"]) / bins
        per["mean_in"] = sum(per["in"]) / bins
        out["ranks"][r] = per
    return out


def analyze(trace: Trace, bins: int = 50) -> dict:
    """Everything above in one JSON-ready dict (what ``netlab analyze --json`` prints)."""
    rows = breakdown(trace)
    util = link_utilisation(trace, bins)
    path = critical_path(trace)
    on_path = {"compute_s": sum(p["end_s"] - p["start_s"] for p in path if p["kind"] == "compute"),
               "comm_s": sum(p["end_s"] - p["start_s"] for p in path if p["kind"] == "comm")}
    return {"clock": "virtual" if trace.virtual else "wall", "ranks": trace.world_size,
            "makespan_s": trace.makespan, "breakdown": rows, "straggler": straggler(trace),
            "critical_path": path, "critical_path_totals": on_path,
            "utilisation": {r: {"mean_out": u["mean_out"], "mean_in": u["mean_in"], "bytes_out": u["bytes_out"]}
                            for r, u in util["ranks"].items()},
            "links": peer_links(trace), "pauses": pauses(trace)}


def peer_links(trace: Trace, latency: float | None = None) -> list[dict]:
    """Per directed pair (src, dst) that exchanged messages: what the sender's port carried and how fast.

    A message of n bytes holds the sender's port for alpha + n/B (``netlab.net.network``), so a pair's
    send durations show the link it used. ``rate_Bps``: bytes / busy time (alpha included).
    ``bandwidth_Bps`` and ``alpha_s``: with `latency` (the link's stated alpha) B = n / (busy - count * alpha);
    without it, the least-squares line through (bytes, duration) when the pair sent two sizes or more,
    else None. ``latency_share``: count * alpha / busy, the part of the port's time that carried no byte.
    A slow NIC shows as low bandwidth on every pair that touches one rank; an oversubscribed spine as
    low bandwidth on the pairs that cross it; buckets too small as a high latency share everywhere.
    """
    if latency is not None:
        latency = validate.number(latency, "latency", 0)
    pairs: dict = {}
    for e in trace.events:
        if e.kind == "send" and e.end > e.start:
            pairs.setdefault((e.rank, e.peer), []).append((e.bytes, e.end - e.start))
    rows = []
    for (src, dst), msgs in sorted(pairs.items()):
        count, nbytes, busy = len(msgs), sum(n for n, _ in msgs), sum(d for _, d in msgs)
        alpha = bw = None
        if latency is not None:
            alpha = float(latency)
            data = busy - count * alpha
            bw = nbytes / data if data > 0 and nbytes > 0 else None
        elif len({n for n, _ in msgs}) >= 2:
            mn, md = nbytes / count, busy / count
            sxx = sum((n - mn) ** 2 for n, _ in msgs)
            slope = sum((n - mn) * (d - md) for n, d in msgs) / sxx
            if slope > 0:
                alpha, bw = max(0.0, md - slope * mn), 1.0 / slope
        rows.append({"src": src, "dst": dst, "messages": count, "bytes": nbytes, "busy_s": busy,
                     "rate_Bps": nbytes / busy, "alpha_s": alpha, "bandwidth_Bps": bw,
                     "latency_share": count * alpha / busy if alpha is not None else None})
    return rows


def pauses(trace: Trace) -> list[dict]:
    """Per fabric port that was ever paused (PFC), busiest first: ``port``, ``paused_s`` (time some
    priority was paused, up to the step's end), ``pauses`` (times it went from running to paused),
    ``share`` (paused_s over the step), ``rank`` (the host at the port's end) and ``by`` (who sends
    the PAUSE: ``"host"`` for the switch's port toward a host, ``"switch"`` for a host's NIC).
    Read from the trace's counter tracks (``<port> paused``); empty without a congestion fabric."""
    import re
    end = trace.makespan
    rows = []
    for c in trace.counters:
        if not c["track"].endswith(" paused"):
            continue
        port = c["track"][:-len(" paused")]
        down, nic = re.fullmatch(r"switch->rank(\d+)", port), re.fullmatch(r"rank(\d+)\.nic", port)
        if not (down or nic):
            continue                                      # another job's NIC: not a rank of this trace
        times, values = list(c["t"]) + [end], list(c["v"])
        paused = sum(max(0.0, min(times[i + 1], end) - times[i]) for i in range(len(values)) if values[i] > 0)
        starts = sum(1 for i in range(len(values)) if values[i] > 0 and (i == 0 or values[i - 1] == 0))
        rows.append({"port": port, "rank": int((down or nic).group(1)), "by": "host" if down else "switch",
                     "paused_s": paused, "pauses": starts, "share": paused / end if end > 0 else 0.0})
    return sorted(rows, key=lambda r: (-r["paused_s"], r["port"]))
