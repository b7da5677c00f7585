"""The lab's visual language: distinct looks per algorithm and method, aligned time axes, labelled lines."""
import matplotlib

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
