"""Chapter 4's figures: accuracy against steps and virtual time, and step time against bandwidth.

Each function draws into given Axes (or a new figure) and returns the figure, so a widget panel can
redraw into one Output without leaking figures.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from .pays import bandwidth_label, crossover


def _name(r) -> str:
    from .pays import label
    return label(r.method, r.options) + (" + EF" if r.error_feedback and r.method != "none" else "")


def accuracy_curves(results, baseline=None, axes=None):
    """Test accuracy against steps (left) and against the virtual clock (right)."""
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    else:
        fig = axes[0].figure
    runs = ([baseline] if baseline is not None else []) + list(results)
    for i, r in enumerate(runs):
        style = {"color": "black", "linestyle": "--"} if r is baseline else {}
        name = "fp32 baseline" if r is baseline else _name(r)
        if r.diverged is not None:
            name += f" (diverged at step {r.diverged})"
        axes[0].plot(r.steps, r.accuracy, label=name, **style)
        axes[1].plot([t * 1e3 for t in r.time_s], r.accuracy, label=name, **style)
    axes[0].set(xlabel="step", ylabel="test accuracy", title="accuracy vs steps", ylim=(0, 1))
    axes[1].set(xlabel="virtual time (ms)", ylabel="test accuracy", title="accuracy vs time", ylim=(0, 1))
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def step_time_vs_bandwidth(rows, ax=None, baseline_label: str = "none", mark: float | None = None):
    """Step time of each method against bandwidth (log-log); the baseline dashed; crossovers dotted."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(10, 4.6))
    labels = [lab for lab in dict.fromkeys(r["label"] for r in rows) if lab != baseline_label]
    colors = plt.get_cmap("tab20" if len(labels) > 10 else "tab10").colors
    for lab in [baseline_label] + labels:
        pts = sorted((r["bandwidth_Bps"] * 8 / 1e9, r["step_s"] * 1e3) for r in rows if r["label"] == lab)
        if not pts:
            continue
        xs, ys = zip(*pts)
        if lab == baseline_label:
            ax.plot(xs, ys, "k--", lw=2.5, label="fp32 all-reduce (baseline)", zorder=3)
            continue
        color = colors[labels.index(lab) % len(colors)]
        ax.plot(xs, ys, "o-", ms=3, color=color, label=lab)
        cross = crossover(rows, lab, baseline_label)
        if cross is not None:
            ax.axvline(cross * 8 / 1e9, color=color, lw=0.8, ls=":")
    if mark is not None:
        ax.axvline(mark * 8 / 1e9, color="grey", lw=6, alpha=0.2, label="your bandwidth")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from .codec_cost import describe_codec
    ax.set(xlabel="bandwidth (Gbit/s, 1e9 bit/s)", ylabel="step time (ms, virtual)",
           title=f"when compression pays ({describe_codec(rows[0].get('codec', 'model'))})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def crossover_table(rows, baseline_label: str = "none") -> list[dict]:
    """Per method: its speedup at the slowest link, how fast its codec processes the fp32 gradient
    (dense bytes / codec seconds, in Gbit/s to compare with links), and the bandwidth above which it
    stops beating fp32."""
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
                    "pays below": bandwidth_label(cross) if cross else
                    ("always (in range)" if low["step_s"] < base[slowest] else "never (in range)")})
    return out


def method_grid(rows, baseline, x: str = "step", columns: int = 4):
    """Small multiples, one per method of ``table.method_table``: accuracy without EF, with EF, fp32.

    x: "step" (against steps) or "time" (against virtual time, ms).
    """
    if x not in ("step", "time"):
        raise ValueError(f"x: must be 'step' or 'time', got {x!r}")
    rows = [r for r in rows if r["method"] != "none"]
    n_rows = max(1, -(-len(rows) // columns))
    fig, axes = plt.subplots(n_rows, columns, figsize=(3 * columns, 2.3 * n_rows), squeeze=False,
                             sharey=True)

    def xs(run):
        return run.steps if x == "step" else [t * 1e3 for t in run.time_s]
    for ax, row in zip(axes.flat, rows):
        plain, ef = row["runs"]
        ax.plot(xs(baseline), baseline.accuracy, "k--", lw=1, label="fp32")
        ax.plot(xs(plain), plain.accuracy, label="no EF" + (" (diverged)" if plain.diverged is not None else ""))
        if ef is not plain:
            ax.plot(xs(ef), ef.accuracy, label="EF" + (" (diverged)" if ef.diverged is not None else ""))
        ax.set_title(row["method"], fontsize=9)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("step" if x == "step" else "virtual time (ms)")
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy")
    fig.tight_layout()
    return fig
