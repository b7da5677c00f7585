"""The lab's one per-rank timeline (chapters 1 and 7, and any chapter that draws what ranks did when).

Its data is one type, a list of intervals ``(rank, start_s, end_s, kind)``, whatever produced them:
``from_trace`` reads a run's trace (compute, sending, receiving, and waiting until the rank's clock
stopped), chapter 7 its kernels (``figures.trace``). A kind is a meaning, drawn the same in every
chapter: its colour is ``common.COLORS[kind]`` and its look (edge, stacking order) ``STYLE[kind]``;
where in its rank's row it sits is the lane (``LANES``, chapter 1's; chapter 7 passes ``SPLIT``).
Left out: what a chapter writes beside its rows (``notes`` takes the text) and its layout.
"""
from __future__ import annotations

from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle

from ..runtime.trace import Trace
from ..validate import choice
from .common import COLORS, axes_or_new, below, time_unit

UNITS = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}
# Each meaning's name in a legend, in the legend's order.
NAMES = {"compute": "compute", "comm": "communication", "send": "sending", "recv": "receiving", "idle": "waiting"}
# Each meaning's look on every timeline: drawn in this order (waiting below compute below messages); the
# messages edged in white, so back-to-back sends (or buckets) stay apart.
STYLE = {"idle": {"zorder": 0, "linewidth": 0}, "compute": {"zorder": 1, "linewidth": 0},
         "send": {"zorder": 2, "edgecolor": "white", "linewidth": 0.3},
         "recv": {"zorder": 2, "edgecolor": "white", "linewidth": 0.3},
         "comm": {"zorder": 2, "edgecolor": "white", "linewidth": 0.3}}
# Where each kind sits in its rank's row: (offset of its top from the row's centre, height), ranks 1 apart.
# Chapter 1: compute over the whole row, sending its upper half, receiving its lower half, waiting behind.
LANES = {"idle": (-0.4, 0.8), "compute": (-0.4, 0.8), "send": (-0.4, 0.4), "recv": (0.0, 0.4)}
# Chapter 7: compute in the upper lane, communication (a collective, or the messages) in the lower one.
SPLIT = {"compute": (-0.45, 0.4), "comm": (0.05, 0.4)}


def from_trace(trace: Trace) -> list[tuple]:
    """A trace's intervals: per rank, waiting from 0 to its clock, then its compute, sends and receives."""
    out = []
    for r in range(trace.world_size):
        out.append((r, 0.0, trace.clocks[r], "idle"))
        out += [(r, e.start, e.end, e.kind) for e in trace.of(r) if e.kind in ("compute", "send", "recv")]
    return out


def timeline(intervals: list[tuple], *, ax=None, ranks: int | None = None, lanes: dict | None = None,
             span_s: float | None = None, unit: str | None = None, clock: str = "", title: str | None = None,
             step: tuple[float, float] | None = None, notes: list[str] | None = None, legend: bool = True,
             outline: bool = False):
    """One row per rank (rank 0 on top), each interval ``(rank, start_s, end_s, kind)`` a box in its
    kind's colour and lane (``lanes``, default ``LANES``; a kind without a lane is not drawn).

    ranks: the number of rows (default: the highest rank + 1). span_s: the time axis runs from 0 to
    span_s, so a figure drawn with the same span lines up with it (default: the last interval's end).
    unit: the time unit, "s", "ms", "us" or "ns" (default: the one ``time_unit`` suggests for span_s).
    clock: the word before "time" in the axis label ("virtual", "wall"). step: (compute_s, comm_s) of
    the whole step, drawn as a first row "step" above the ranks with each part's share written in it.
    notes: a text per rank, written beside its row on the right. legend: name each lane's colour below.
    outline: edge every box in its own colour (1 pt) instead of ``STYLE``'s edge, so a kernel a few
    microseconds long stays visible on a millisecond axis (chapter 7).

    Drawing again into the same axes replaces what the last call drew (a panel keeps its axes: making
    an axes and its ticks was a sixth of a chapter 1 change)."""
    lanes = LANES if lanes is None else {choice(kind, "lanes", list(STYLE)): lane for kind, lane in lanes.items()}
    ranks = ranks if ranks is not None else 1 + max((iv[0] for iv in intervals), default=-1)
    own = ax is None                              # a caller's axes: the caller lays the figure out once
    fig, ax = axes_or_new(ax, (9, 0.45 * ranks + 1.2))
    for artist in getattr(ax, "_netlab_timeline", ()):
        artist.remove()
    drawn = ax._netlab_timeline = []
    span_s = span_s or max((iv[2] for iv in intervals), default=0.0) or 1.0
    factor, unit = (UNITS[choice(unit, "unit", list(UNITS))], unit) if unit else time_unit(span_s)
    ax.set_xlim(0, span_s * factor)
    # One collection per kind for all ranks, added without autoscaling (limits are set here): a panel
    # redraws this on every change, and a broken_barh call per rank and kind was a third of its time.
    boxes = {kind: [] for kind in sorted(lanes, key=lambda k: STYLE[k]["zorder"])}
    for r, start, end, kind in intervals:
        if kind in lanes:
            top, height = lanes[kind]
            boxes[kind].append((start * factor, (end - start) * factor, r + top, height))
    for kind, rows in boxes.items():
        if rows:
            look = dict(STYLE[kind], edgecolor=COLORS[kind], linewidth=1.0) if outline else STYLE[kind]
            drawn.append(ax.add_collection(PolyCollection([((x, y), (x, y + h), (x + w, y + h), (x + w, y))
                                                           for x, w, y, h in rows], facecolor=COLORS[kind],
                                                          **look), autolim=False))
    ax.set_ylim(ranks - 0.5, -0.5)
    ticks, labels = list(range(ranks)), [f"rank {r}" for r in range(ranks)]
    if step is not None:
        y = -1.3
        drawn += _step_row(ax, step, factor=factor, span_s=span_s, y=y)
        ticks, labels = [y] + ticks, ["step"] + labels
        ax.set_ylim(ranks - 0.5, y - 0.6)
    for r, note in enumerate(notes or ()):
        drawn.append(ax.text(1.01, r, note, transform=ax.get_yaxis_transform(), fontsize=8, va="center"))
    ax.set_yticks(ticks, labels)
    ax.set_xlabel(f"{clock} time ({unit})".lstrip())
    if legend and ax.get_legend() is None:
        kinds = [k for k in NAMES if k in lanes]
        ax.legend([Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in kinds], [NAMES[k] for k in kinds],
                  loc="upper center", bbox_to_anchor=(0.5, -below(ax, 0.42)), ncol=len(kinds), frameon=False)
    ax.set_title(title or "per-rank timeline")
    if own:
        fig.tight_layout()
    return fig


def _step_row(ax, step: tuple[float, float], factor: float, span_s: float, y: float) -> list:
    """The whole step's compute then communication as one row at `y`, each share written in it."""
    compute_s, comm_s = step
    total, drawn = compute_s + comm_s, []
    for start, length, kind in ((0, compute_s, "compute"), (compute_s, comm_s, "comm")):
        drawn.append(ax.add_patch(Rectangle((start * factor, y - 0.45), length * factor, 0.9,
                                            color=COLORS[kind], zorder=1)))
        if total and length / (span_s or total) > 0.12:          # room for the words
            drawn.append(ax.text((start + length / 2) * factor, y, f"{NAMES[kind]} {length / total:.0%}",
                                 ha="center", va="center", color="white", fontsize=9, fontweight="bold",
                                 zorder=3))
    drawn.append(ax.axhline(-0.7, color="#888888", linewidth=0.6))
    return drawn
