"""Chapter 4's claims, each checked by running the chapter's experiment at its sizes (tests/claims.py).

The short runs (60 and 30 steps) are the chapter's CI sizes; claims the chapter makes about 300 steps are
checked at 300 steps (marked slow), and so is every claim whose check takes more than a few seconds: those
read off the 30-step table (17 of its runs, about 12 s, which would be a sixth of `make quick`), those read
off the bandwidth sweeps (5 s), and the 60-step accuracy checks of top-k, threshold and int8 (3-4 s each).
Accuracy bounds are margins stated for every seed tried, wire bytes and crossovers are derived from the
ring's and the all-gather's closed forms, never fitted to one run.

Each training configuration runs once in the test session (``accuracy`` reads tests/trainings.py's memo, which
test_capstone.py and test_compress_train.py share): the runs are deterministic (seeded data, model and
compressors; a virtual clock), so two tests that read the same run, say the 30-step fp32 baseline, read the
same numbers a second run would give.
"""
import math

import pytest

import trainings
from claims import claim
from netlab.dataparallel import train
from netlab.compress import pays, table
from netlab.compress.codec_cost import label

RANKS = 4
SEEDS = (0, 1)


@pytest.fixture(scope="module", autouse=True)
def _one_run_per_configuration(tmp_path_factory):
    trainings.share(tmp_path_factory)


def accuracy(method, steps, seed=0, error_feedback=False, **options):
    """The chapter's training (4 ranks, its model, data and codec cost) of `method`: run once per configuration."""
    return trainings.run_training(method, ranks=RANKS, steps=steps, seed=seed, error_feedback=error_feedback,
                                  **options)


TABLE_STEPS = 30                                                  # the chapter's table at its CI length
TABLE = {label(m, options): (m, options) for m, options in table.for_steps(TABLE_STEPS)}   # DGC's warm-up scaled
DGC = next(name for name in TABLE if name.startswith("dgc"))


def row(name, error_feedback=False):
    """One run of the chapter's 30-step table (``table.method_table``'s rows: the method's run without and
    with error feedback, seed 0), by the name the table prints; only the runs a claim reads are trained."""
    method, options = TABLE[name]
    return accuracy(method, TABLE_STEPS, error_feedback=error_feedback, **options)


@pytest.mark.slow           # six 60-step runs: about 4 s
@claim("ch4.topk-ef-closes-gap")
def test_topk_with_error_feedback_closes_most_of_the_gap_and_sends_25_times_fewer_bytes():
    for seed in SEEDS:
        base, topk = accuracy("none", 60, seed), accuracy("topk", 60, seed, ratio=0.01)
        ef = accuracy("topk", 60, seed, ratio=0.01, error_feedback=True)
        gained, left = ef.final_accuracy - topk.final_accuracy, base.final_accuracy - ef.final_accuracy
        assert gained > 0.1 and gained > left, (seed, base.final_accuracy, topk.final_accuracy, ef.final_accuracy)
    n = 4 * train.parameter_count(128)
    k = round(0.01 * train.parameter_count(128))
    ring, gathered = 2 * (RANKS - 1) / RANKS * n, (RANKS - 1) * 8 * k          # 8 bytes per kept element
    assert base.bytes_per_step == pytest.approx(ring, rel=0.01)
    assert ef.bytes_per_step == pytest.approx(gathered, rel=0.02) and 24 < ring / gathered < 26


@claim("ch4.randomk-ef-diverges")
def test_rescaled_randomk_trains_alone_and_diverges_within_a_few_dozen_steps_with_error_feedback():
    for seed in SEEDS:
        alone = accuracy("randomk", 60, seed, ratio=0.1)
        ef = accuracy("randomk", 60, seed, ratio=0.1, error_feedback=True)
        assert alone.diverged is None and alone.final_accuracy > 0.5, seed
        assert ef.diverged is not None and ef.diverged < 50, seed


@pytest.mark.slow           # the 30-step table's runs: in make test only
@claim("ch4.codec-charged")
def test_qsgd_steps_slower_than_fp32_at_1gbit_and_topk_faster():
    base = accuracy("none", TABLE_STEPS)
    assert row("qsgd (bits=4)").step_s > base.step_s > row("topk (ratio=0.01)", error_feedback=True).step_s
    assert row("randomk (ratio=0.1)").step_s > base.step_s


@pytest.mark.slow           # the 30-step table's runs: in make test only
@claim("ch4.fp16-free")
def test_fp16_and_bf16_end_where_fp32_ends():
    base = accuracy("none", TABLE_STEPS)
    for m in ("fp16", "bf16"):
        assert abs(row(m).final_accuracy - base.final_accuracy) <= 0.01


@pytest.mark.slow           # five 30-step runs (seed 0's fp32 run is the table's baseline): about 3 s
@claim("ch4.int8-trails-early")
def test_int8_trails_fp32_after_30_steps_for_every_seed():
    for seed in (0, 1, 2):
        assert accuracy("int8", 30, seed).final_accuracy < accuracy("none", 30, seed).final_accuracy, seed


@pytest.mark.slow           # the 30-step table's runs: in make test only
@claim("ch4.ef-rescues-biased")
def test_error_feedback_adds_more_than_ten_points_to_every_biased_compressor():
    for m in ("sign", "majority", "topk (ratio=0.01)", "powersgd (rank=1)", "powersgd (rank=2)"):
        assert row(m, error_feedback=True).final_accuracy > row(m).final_accuracy + 0.1, m


@pytest.mark.slow           # four 30-step runs: about 3 s
@claim("ch4.threshold-below-chance")
def test_threshold_without_error_feedback_ends_below_chance_and_recovers_with_it():
    for seed in SEEDS:
        alone = accuracy("threshold", 30, seed, tau=0.01)
        ef = accuracy("threshold", 30, seed, tau=0.01, error_feedback=True)
        assert alone.final_accuracy < 0.1 < ef.final_accuracy, seed


@pytest.mark.slow           # the 30-step table's runs: in make test only
@claim("ch4.dgc-beats-topk")
def test_dgc_without_error_feedback_trains_better_than_topk_alone():
    assert row(DGC).final_accuracy > row("topk (ratio=0.01)").final_accuracy


@pytest.mark.slow           # the 30-step table's runs: in make test only
@claim("ch4.dgc-beats-fp32")
def test_dgc_with_error_feedback_beats_plain_sgd_fp32():
    assert row(DGC, error_feedback=True).final_accuracy > accuracy("none", TABLE_STEPS).final_accuracy


@pytest.mark.slow
@claim("ch4.int8-catches-up")
def test_int8_ends_within_a_point_of_fp32_after_300_steps():
    long_base = accuracy("none", 300)
    assert abs(accuracy("int8", 300).final_accuracy - long_base.final_accuracy) <= 0.01


@pytest.mark.slow
@claim("ch4.unbiased-fine")
def test_qsgd_and_terngrad_end_within_a_point_of_fp32_after_300_steps_without_error_feedback():
    long_base = accuracy("none", 300)
    for method, options in (("qsgd", {"bits": 4}), ("terngrad", {})):
        assert abs(accuracy(method, 300, **options).final_accuracy - long_base.final_accuracy) <= 0.01, method


@pytest.mark.slow
@claim("ch4.powersgd-ef-within-a-point")
def test_powersgd_rank_1_and_2_with_error_feedback_end_within_a_point_of_fp32_after_300_steps():
    long_base = accuracy("none", 300)
    for rank in (1, 2):
        ef = accuracy("powersgd", 300, rank=rank, error_feedback=True)
        assert abs(ef.final_accuracy - long_base.final_accuracy) <= 0.01, rank


SWEEP = [(m, options, m not in ("none", "randomk")) for m, options in table.TABLE if m != "threshold"]
BANDWIDTHS = pays.BANDWIDTHS[::4]                                     # the chapter's CI bandwidths


@pytest.fixture(scope="module")
def sweeps():
    return {w: pays.step_times(SWEEP, BANDWIDTHS, ranks=RANKS, width=w) for w in (128, 1024)}


@pytest.mark.slow           # the chapter's sweeps at two widths (fixture sweeps): about 5 s, in make test only
@claim("ch4.slow-link-wins")
def test_every_method_wins_on_the_slowest_link_and_loses_on_the_fastest(sweeps):
    rows = sweeps[128]
    cross = {r["method"]: r for r in pays.crossover_table(rows)}
    for m, r in cross.items():
        assert r["speedup at 100Mbit/s"] > 1 and r["pays below"].endswith("Gbit/s"), m
    for m in ("topk (ratio=0.01)", "dgc (ratio=0.01, warmup_steps=40)", "powersgd (rank=1)", "powersgd (rank=2)"):
        assert cross[m]["speedup at 100Mbit/s"] > 8, m                 # "around an order of magnitude"


@pytest.mark.slow           # the chapter's sweeps at two widths (fixture sweeps): about 5 s, in make test only
@claim("ch4.crossover-formula")
def test_topks_measured_crossover_is_the_closed_forms(sweeps):
    row = next(r for r in sweeps[128] if r["method"] == "topk")
    p, n, nc, alpha = RANKS, row["dense_bytes"], row["payload_bytes"], 5e-6
    formula = (2 * (p - 1) / p * n - (p - 1) * nc) / (row["codec_s"] - (p - 1) * alpha)     # written out here
    assert pays.crossover(sweeps[128], row["label"]) == pytest.approx(formula, rel=0.01)


@pytest.mark.slow           # the chapter's sweeps at two widths (fixture sweeps): about 5 s, in make test only
@claim("ch4.crossover-stays")
def test_element_wise_crossovers_stay_within_a_few_percent_from_width_128_to_1024(sweeps):
    for m in ("fp16", "bf16", "int8", "sign", "topk (ratio=0.01)", "terngrad"):
        moved = pays.crossover(sweeps[1024], m) / pays.crossover(sweeps[128], m)
        assert 0.9 < moved < 1.1, (m, moved)


@pytest.mark.slow           # the chapter's sweeps at two widths (fixture sweeps): about 5 s, in make test only
@claim("ch4.crossover-rule")
def test_the_rule_s_times_codec_throughput_is_within_5_percent_but_for_powersgds_latencies(sweeps):
    for width, rows in sweeps.items():
        for r in rows:
            if r["label"] == "none" or r["bandwidth"] != BANDWIDTHS[0]:
                continue
            p, share = RANKS, r["payload_bytes"] / r["dense_bytes"]
            s = 2 * (p - 1) / p * (1 - share) if r["communicator"] == "allreduce" else 2 * (p - 1) / p - (p - 1) * share
            rule, measured = s * r["dense_bytes"] / r["codec_s"], pays.crossover(rows, r["label"])
            if r["method"] == "powersgd" and width == 128:
                # more all-reduces than the ring's one, each with 2(p-1) latencies: compression pays less
                assert 0.7 * rule < measured < 0.95 * rule, (width, r["label"], measured / rule)
            else:
                assert measured == pytest.approx(rule, rel=0.05), (width, r["label"])
                if r["communicator"] == "allgather":           # p - 1 messages against the ring's 2(p - 1)
                    assert measured >= rule * (1 - 1e-9), (width, r["label"])
    fp16 = next(r for r in sweeps[128] if r["method"] == "fp16" and r["bandwidth"] == BANDWIDTHS[0])
    assert fp16["communicator"] == "allreduce" and math.isclose(2 * 3 / 4 * (1 - 0.5), 0.75)


@pytest.mark.slow           # the chapter's sweeps at two widths (fixture sweeps): about 5 s, in make test only
@claim("ch4.powersgd-moves-up")
def test_powersgds_crossover_moves_up_with_the_layers_width(sweeps):
    for m in ("powersgd (rank=1)", "powersgd (rank=2)"):
        assert pays.crossover(sweeps[1024], m) > 1.1 * pays.crossover(sweeps[128], m), m
