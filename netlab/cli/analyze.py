"""``netlab analyze``: where a traced step's time went, per rank (chapter 7).

    python -m netlab step --ranks 8 --bucket 1M --overlap --trace step.json
    python -m netlab analyze step.json --json
    python -m netlab analyze step.json --hta hta_traces/     # also write files for Meta's HTA
    python -m netlab analyze step.json --perfetto out.json   # the trace with NIC utilisation counters

Reads any trace netlab wrote (virtual or wall clock, torchrun included) and prints the temporal
breakdown (compute, exposed communication, idle), the comm/compute overlap, the straggler, the
critical path and each rank's NIC utilisation (``netlab.observe.analysis``).
"""
from __future__ import annotations

import json

from .. import validate
from ..units import fmt_bytes, fmt_time
from . import emit


def add_parser(p) -> None:
    p.add_argument("trace", help="a trace written by netlab (--trace FILE or Trace.save)")
    p.add_argument("--bins", type=int, default=50, help="time slices for NIC utilisation (default 50)")
    p.add_argument("--hta", metavar="DIR", help="also write one HTA-readable trace file per rank into DIR")
    p.add_argument("--perfetto", metavar="FILE", help="also write the trace with NIC utilisation counter tracks")
    p.add_argument("--json", action="store_true", help="print JSON (seconds of the trace's clock)")


def main(args) -> int:
    from ..observe.analysis import analyze
    from ..observe.hta_export import hta_export, load, with_counters
    validate.whole(args.bins, "bins", 1)
    trace = load(args.trace)
    report = analyze(trace, args.bins)
    if args.hta:
        hta_export(trace, args.hta)
    if args.perfetto:
        with open(args.perfetto, "w") as f:
            json.dump(with_counters(trace, args.bins), f)
    lines = [f"netlab analyze: {args.trace}, {report['ranks']} ranks, {report['clock']} clock, "
             f"step {fmt_time(report['makespan_s'])}",
             "  rank   compute   exposed comm   idle      overlap   NIC out  NIC in   sent"]
    for row in report["breakdown"]:
        u = report["utilisation"][row["rank"]]
        lines.append(f"  {row['rank']:>4}   {fmt_time(row['compute_s']):>9} {fmt_time(row['exposed_comm_s']):>12}  "
                     f"{fmt_time(row['idle_s']):>9} {row['overlap_frac']:>8.0%}  {u['mean_out']:>7.0%} "
                     f"{u['mean_in']:>7.0%}  {fmt_bytes(u['bytes_out'])}")
    s = report["straggler"]
    lines.append(f"  straggler: rank {s['rank']}, enters collective {s['collective']} {fmt_time(s['lag_s'])} late"
                 if s["rank"] is not None else "  straggler: none (every rank spends the same time in every collective)")
    tot = report["critical_path_totals"]
    lines.append(f"  critical path: {len(report['critical_path'])} segments, compute {fmt_time(tot['compute_s'])}, "
                 f"communication {fmt_time(tot['comm_s'])}")
    for row in report.get("pauses", []):
        lines.append(f"  PFC pause: {row['port']} paused {fmt_time(row['paused_s'])} ({row['share']:.0%} of the step, "
                     f"{row['pauses']} times) by the {row['by']}")
    emit(report, args.json, "\n".join(lines))
    return 0
