"""Chapter 7's panel: bucket size, overlap on/off, nodes, bandwidth and latency; one bucketed step per change.

Every change runs a real DDP-style step on real ranks (``step.measure_step`` with ``bucket`` and
``overlap``) and shows, on the left, each rank's timeline with the breakdown ``netlab.observe.analysis`` reads
from its trace (``figures.trace.step_view``: exposed communication and overlap fraction per rank), and
on the right the step time against bucket size: the alpha-beta pipeline prediction
(``dataparallel.bucket_sweep``) as lines, and the measured steps of this network as dots, the current
setting ringed. The curve is a prediction because measuring it would take a dozen runs per change;
the dots say where the prediction was checked.

The ``scenario`` control swaps the step for a "find the bottleneck" case (``netlab.observe.scenarios``): the
kind chosen, its culprit drawn from ``seed``, run on real ranks. The panel then shows what a student
may see, never the truth: the public setup, the per-rank timeline and the sender x receiver maps
(``figures.trace.scenario_view``), and beside them the analysis (breakdown, HTA's
straggler, NIC utilisation, PFC pauses per port); ``last`` is then the scenario's trace. The step's
controls are greyed out meanwhile: a scenario fixes its own cluster. Left out: DDP's smaller first
bucket (every bucket here has the chosen cap) and other algorithms than the ring.
"""
from __future__ import annotations

import ipywidgets as widgets

from ..observe import analysis, scenarios
from .. import validate
from ..runtime.pool import MAX_RANKS
from ..data import size
from ..figures.trace import scenario_view, step_view
from ..dataparallel.bucket_sweep import SHAPE, predicted_step_times
from ..dataparallel.step import measure_step
from ..units import fmt_time
from .panel import Panel, choice, dropdown, slider, toggle

# bucket caps shown on the slider: (label, bytes); "one bucket" is larger than any model here
CAPS = [("1 B (one per tensor)", 1), ("20 KB", 20_000), ("100 KB", 100_000), ("300 KB", 300_000),
        ("600 KB", 600_000), ("one bucket", 10**12)]
BANDWIDTHS = ["1Gbit/s", "10Gbit/s", "25Gbit/s", "100Gbit/s"]
LATENCIES = ["1us", "5us", "20us", "50us", "100us"]
SCENARIOS = ("none",) + scenarios.KINDS             # "none": the bucketed step of the controls above
STEP_CONTROLS = ("bucket", "overlap", "ranks", "bandwidth", "latency")


def predicted_curve(ranks: int, bandwidth: str, latency: str, overlap: bool, *, shape: dict = SHAPE,
                    dev: str = "cpu-core") -> list[float]:
    """Step time at every cap of ``CAPS``, from the alpha-beta pipeline (``bucket_sweep``; no ranks run)."""
    return predicted_step_times([c for _, c in CAPS], ranks=ranks, bandwidth=bandwidth, latency=latency,
                                overlap=overlap, shape=shape, dev=dev)


class Ch7Panel(Panel):
    """One bucketed step per change; nodes = 1 greys out bucket and overlap (nothing to send)."""

    min_height = "560px"
    tight = False                 # the figure lays itself out: one draw less per change

    def __init__(self, *, ranks: int = 4, bucket: int = 300_000, overlap: bool = True, bandwidth: str = "10Gbit/s",
                 latency: str = "50us", scenario: str = "none", seed: int = 0, shape: dict | None = None):
        validate.choice(bucket, "bucket", [c for _, c in CAPS])       # a control's value, or one clear line
        validate.choice(overlap, "overlap", (True, False))
        validate.whole(ranks, "ranks", 1, MAX_RANKS, int_only=True)
        validate.choice(bandwidth, "bandwidth", BANDWIDTHS)
        validate.choice(latency, "latency", LATENCIES)
        validate.choice(scenario, "scenario", SCENARIOS)
        seed = scenarios.check_seed(seed)
        self.shape = dict(SHAPE, **(shape or {}))
        self.samples = size("train")
        self.measured: dict = {}                  # (ranks, bandwidth, latency, overlap) -> {cap: step seconds}
        super().__init__({
            "bucket": choice(CAPS, bucket, "bucket size"),
            "overlap": toggle([("on", True), ("off", False)], overlap, "overlap"),
            "ranks": slider(widgets.IntSlider, ranks, 1, MAX_RANKS, description="nodes"),
            "bandwidth": choice(BANDWIDTHS, bandwidth, "bandwidth"),
            "latency": choice(LATENCIES, latency, "latency"),
            "scenario": dropdown(list(SCENARIOS), scenario, "scenario"),
            "seed": widgets.IntText(value=seed, description="seed", style={"description_width": "120px"},
                                    layout=widgets.Layout(width="260px")),
        })

    def greyed(self, values):
        alone = values["ranks"] == 1                  # one rank: no all-reduce, so no bucket to size or hide
        case = values["scenario"] != "none"           # a scenario fixes its own cluster
        return {"bucket": alone or case, "overlap": alone or case, "ranks": case, "bandwidth": case,
                "latency": case, "seed": not case}

    def render(self, values):
        if values.scenario != "none":
            return self.render_scenario(values.scenario, values.seed)
        bucket, overlap, ranks, bandwidth, latency = (values[k] for k in STEP_CONTROLS)
        batch = self.shape["batch"]
        if ranks * batch > self.samples:
            raise ValueError(f"ranks: {ranks} nodes x {batch} samples exceed the {self.samples:,} training digits "
                             f"(at most {self.samples // batch} nodes)")
        r = measure_step(ranks=ranks, bandwidth=bandwidth, latency=latency, bucket=bucket, overlap=overlap,
                         **self.shape)
        self.last = r
        key = (ranks, bandwidth, latency, overlap)
        self.measured.setdefault(key, {})[bucket] = r.total_s
        s = r.setup
        n = len(s["buckets"])
        text = (f"{ranks} nodes, {bandwidth} / {latency}, {n} bucket{'s' if n != 1 else ''} "
                f"({'during' if overlap else 'after'} the backward pass):\n"
                f"  step {fmt_time(r.total_s)}: compute {fmt_time(r.compute_s)}, communication {fmt_time(r.comm_s)}, "
                f"of it exposed {fmt_time(s['exposed_comm_s'])}; overlap fraction {s['overlap_frac']:.0%} "
                f"(the most exposed rank)")
        curve = ([c for _, c in CAPS], predicted_curve(ranks, bandwidth, latency, True, shape=self.shape),
                 predicted_curve(ranks, bandwidth, latency, False, shape=self.shape))
        measured = (f"measured here ({'overlap' if overlap else 'after backward'})", "o" if overlap else "s",
                    self.measured[key])
        fig = step_view(r.trace, curve, measured=measured, current=(bucket, r.total_s))
        return text, fig

    def render_scenario(self, kind: str, seed):
        """One scenario on real ranks: its public setup, timeline, pair maps and analysis (no truth)."""
        seed = scenarios.check_seed(seed)
        case = scenarios.scenario(kind, seed)
        self.last = case.trace                        # the trace and the public setup; the truth stays out
        self.setup = case.setup
        text = "\n".join(scenario_lines(case.trace, case.setup, f"{kind}, seed {seed}") + [fixed_line(case.setup)])
        fig = scenario_view(case.trace, latency=case.setup["latency_s"], bandwidth=case.setup["bandwidth_Bps"])
        return text, fig


def fixed_line(setup: dict) -> str:
    """Which of the panel's controls the scenario sets itself (they are greyed out), and to what: only
    what its public setup says (the network's nominal figures), so the line never names the culprit
    (a bucket cap, a slow link)."""
    nodes = f"nodes {setup['ranks']}"
    net = f"bandwidth {fmt_bandwidth_bits(setup['bandwidth_Bps'])}, latency {fmt_time(setup['latency_s'])}"
    if setup.get("workload") == "ps":
        rest = "bucket size and overlap do not apply (parameter-server pushes and pulls, no buckets)"
    else:
        rest = "bucket size: the scenario's own, overlap on (buckets all-reduced during the backward pass)"
    return (f"  fixed by the scenario, so the step's controls above are greyed out and not used: {nodes}, "
            f"{net}, {rest}; the seed box picks the case")


def fmt_bandwidth_bits(bytes_per_s: float) -> str:
    """A NIC's rate as the controls write it: 10 Gbit/s."""
    return f"{bytes_per_s * 8 / 1e9:g} Gbit/s"


def scenario_lines(trace, setup: dict, title: str) -> list[str]:
    """What the panel prints beside a scenario's figure: the public setup and the analysis of its trace."""
    rows = analysis.breakdown(trace)
    util = analysis.link_utilisation(trace)["ranks"]
    lines = [f"scenario {title}: {setup['what']}", f"  network: {setup['network']}",
             f"  step {fmt_time(trace.makespan)}",
             "  rank   compute   exposed comm   idle   NIC busy out / in"]
    for row in rows:
        u = util[row["rank"]]
        lines.append(f"  {row['rank']:>4}  {fmt_time(row['compute_s']):>8}  {fmt_time(row['exposed_comm_s']):>13}  "
                     f"{fmt_time(row['idle_s']):>8}   {u['mean_out']:.0%} / {u['mean_in']:.0%}")
    s = analysis.straggler(trace)
    lines.append(f"  all-reduces per step: {len(analysis.collectives_of(trace, 0))}; HTA's straggler rule: "
                 + ("none" if s["rank"] is None else f"rank {s['rank']} ({fmt_time(s['lag_s'])} late)"))
    paused = analysis.pauses(trace)
    if paused:
        lines.append("  PFC pauses (port: paused share of the step, times, paused by): " + "; ".join(
            f"{p['port']}: {p['share']:.0%}, {p['pauses']}x, by the {'host' if p['by'] == 'host' else 'switch'}"
            for p in paused))
    else:
        lines.append("  PFC pauses: none" + ("" if trace.counters else " (no switch model in this network)"))
    return lines
