"""The lab's visual language: distinct looks per algorithm and method, aligned time axes, labelled lines."""
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from netlab.compress.pays import label  # noqa: E402
from netlab.compress.table import TABLE  # noqa: E402
from netlab.figures import collectives, common  # noqa: E402
from netlab.ui.panel import Setting  # noqa: E402


def _look(style):
    return style["color"], style["marker"], str(style["linestyle"])


def test_every_algorithm_and_method_has_its_own_look():
    algos = [_look(common.algorithm_style(a)) for a in common.ALGORITHMS]
    assert len(set(algos)) == len(algos)
    methods = [_look(common.method_style(label(m, o))) for m, o in TABLE]
    assert len(set(methods)) == len(methods)                  # fp16 vs bf16, PowerSGD rank 1 vs 2 included
    assert common.method_style("none")["color"] == "black" and common.method_style("none")["linestyle"] == "--"


def test_equal_costs_stay_visible_and_lines_are_labelled():
    rows = [{"algo": a, "bytes": s, "time_s": 1e-3 * s / 1e6, "predicted_s": 1e-3 * s / 1e6}
            for a in ("naive", "ring") for s in (1e3, 1e6)]          # two algorithms with identical times
    fig = collectives.time_vs_size(rows)
    ax = fig.axes[0]
    markers = [line for line in ax.lines if line.get_linestyle() == "None"]
    xs = {tuple(line.get_xdata()) for line in markers}
    assert len(xs) == 2                                        # offset along x: neither hides the other
    assert {t.get_text() for t in ax.texts} >= {"naive", "ring"}   # direct labels, no legend
    assert ax.get_legend() is None
    plt.close(fig)


def test_chapter1_panel_shares_one_time_axis_and_takes_samples_per_device():
    from netlab.ui.ch1 import StepPanel
    panel = StepPanel(ranks=2, batch=64)
    assert panel.last.setup["batch_per_rank"] == 64
    text, fig = panel.render(Setting(ranks=2, bandwidth="10Gbit/s", latency="5us", width=128, batch=16, device="cpu-core"))
    (ax,) = fig.axes                         # the step's split is the first row of the timeline's axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["step", "rank 0", "rank 1"]
    span = max(panel.last.total_s, panel.last.trace.makespan)
    factor = {"s": 1, "ms": 1e3, "us": 1e6}[ax.get_xlabel().split("(")[1].rstrip(")")]
    assert ax.get_xlim() == (0, span * factor)
    shares = sorted(t.get_text() for t in ax.texts)            # the split's shares, written in its bars
    assert shares and all(t.split()[0] in ("compute", "communication") for t in shares)
    assert "16 samples" in text and all(len(line) <= 100 for line in text.splitlines())


def test_line_labels_stay_beside_their_lines_whatever_the_data_range():
    # label_lines once placed labels with the axes' stale (0, 1) limits: times in microseconds put the
    # labels 70 axes-heights up and chapter 2's figure came out 20,593 px tall
    import io
    from PIL import Image
    rows = [{"algo": a, "ranks": p, "predicted_s": k * p * 1e-6, "time_s": k * p * 1e-6}
            for a, k in (("ring", 10), ("tree", 5)) for p in (2, 4, 8)]
    fig = collectives.time_vs_ranks(rows)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    width, height = Image.open(io.BytesIO(buf.getvalue())).size
    assert height < 1.2 * fig.get_figheight() * 100, (width, height)
    ax = fig.axes[0]
    ends = {t.get_text(): t.xyann[1] if hasattr(t, "xyann") else t.get_position()[1] for t in ax.texts}
    assert set(ends) == {"ring", "tree"} and all(0 <= y <= 1.1 for y in ends.values())
    plt.close(fig)


def test_a_panel_redrawing_into_its_kept_figure_draws_what_a_fresh_figure_draws():
    # chapter 1 keeps a figure per node count; what the last change drew must not survive the next
    from netlab.ui.ch1 import StepPanel
    from netlab.ui.panel import png_bytes
    kept = StepPanel(ranks=3, width=128)
    settings = dict(ranks=3, latency="5us", width=128, batch=16, device="cpu-core")
    kept.render(Setting(bandwidth="100Mbit/s", **settings))                   # a slow network: a long comm bar
    again = png_bytes(kept.render(Setting(bandwidth="100Gbit/s", **settings))[1], 100, False)
    fresh = StepPanel(ranks=3, width=128)
    fresh._figures.clear()
    assert again == png_bytes(fresh.render(Setting(bandwidth="100Gbit/s", **settings))[1], 100, False)
    (ax,) = kept._figures[3][1].figure.axes
    assert len(ax.collections) == len(fresh._figures[3][1].collections) and len(ax.texts) <= 2


def test_capstone_curves_never_share_a_look_and_the_bisection_bars_draw_every_row():
    """Chapter 8's scaling figure once drew both curves in the ring's colour and marker: every curve
    (and the published star) is now told apart by colour and by marker in its legend."""
    from matplotlib.figure import Figure
    from netlab.figures.capstone import predicted_efficiency
    from netlab.figures.codesign import bisection_bars
    fig = Figure()
    predicted_efficiency({f"curve {i}": ([4, 8, 16], [1.0, 0.9 - i / 10, 0.8 - i / 10]) for i in range(4)},
            [(16, 0.7, "published")], ax=fig.subplots())
    handles = fig.axes[0].get_legend().legend_handles
    looks = [(h.get_color(), h.get_marker()) for h in handles]
    assert len({c for c, _ in looks}) == len(looks) and len({m for _, m in looks}) == len(looks)
    rows = [{"pattern": p, "ratio": r, "time_s": t, "formula_s": t, "slowdown": t / base, "ranks": 16,
             "bytes": 1 << 20} for p, base in (("ring all-reduce", 1.0), ("all-to-all", 0.5))
            for r, t in ((1, base), (4, base * (1 if p.startswith("ring") else 3.5)))]
    fig = Figure()
    bisection_bars(rows, fig=fig)
    assert len(fig.axes[0].patches) == 4 and len(fig.axes[0].texts) == 4


def _boxes(ax) -> dict:
    """colour -> sorted (x0, x1, y0, y1) of every box an axes' collections drew, read off their paths."""
    from matplotlib.colors import to_hex
    out = {}
    for c in ax.collections:
        for path in c.get_paths():
            (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
            out.setdefault(to_hex(c.get_facecolor()[0]), []).append(tuple(round(v, 9) for v in (x0, x1, y0, y1)))
    return {k: sorted(v) for k, v in out.items()}


def test_one_timeline_draws_each_interval_in_its_meanings_colour_and_lane():
    from netlab.figures.timeline import timeline
    spans = [(0, 0.0, 2e-3, "compute"), (0, 2e-3, 3e-3, "send"), (1, 1e-3, 3e-3, "recv"), (1, 0.0, 1e-3, "what")]
    fig = timeline(spans, clock="wall")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "wall time (ms)" and ax.get_xlim() == (0, 3)     # 0 to the last end, in ms
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 1"]
    assert _boxes(ax) == {"#4c72b0": [(0, 2, -0.4, 0.4)],                # compute: rank 0's whole row
                          "#dd8452": [(2, 3, -0.4, 0.0)],                # sending: the row's upper half
                          "#55a868": [(1, 3, 1.0, 1.4)]}                 # receiving: rank 1's lower half
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["compute", "sending", "receiving", "waiting"]
    for bad, name in ((dict(unit="min"), "unit"), (dict(lanes={"gpu": (0, 0.8)}), "lanes")):
        with pytest.raises(ValueError, match=f"^{name}: must be one of"):
            timeline(spans, **bad)


def test_chapters_1_and_7_paint_one_trace_in_the_same_colours():
    # one trace: compute, then rank 0 sends and rank 1 receives; chapter 7 has no collective regions in
    # it, so its communication lane shows the messages (analysis.kernels)
    from netlab.figures.timeline import from_trace, timeline
    from netlab.figures.trace import kernel_timeline
    from netlab.runtime.trace import Trace
    trace = Trace.from_tuples([[(0, "compute", -1, 0, 0.0, 1e-3, ""), (0, "send", 1, 8, 1e-3, 2e-3, "")],
                               [(1, "compute", -1, 0, 0.0, 1.5e-3, ""), (1, "recv", 0, 8, 1.5e-3, 2e-3, "")]],
                              [2e-3, 2e-3], virtual=True)
    one = _boxes(timeline(from_trace(trace), clock="virtual").axes[0])
    seven = kernel_timeline(trace).axes[0]
    assert [b[:2] for b in one["#4c72b0"]] == [b[:2] for b in _boxes(seven)["#4c72b0"]] == [(0, 1), (0, 1.5)]
    assert _boxes(seven) == {"#4c72b0": [(0, 1, -0.45, -0.05), (0, 1.5, 0.55, 0.95)],     # compute, upper lane
                             "#dd8452": [(1, 2, 0.05, 0.45), (1.5, 2, 1.05, 1.45)]}       # messages, lower lane
    assert one["#dddddd"] == [(0, 2, -0.4, 0.4), (0, 2, 0.6, 1.4)]          # chapter 1: waiting behind each rank
    assert [t.get_text().split("\n")[0] for t in seven.texts] == ["exposed 1.00 ms", "exposed 0.50 ms"]
