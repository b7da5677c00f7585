"""Chapter 4's claims, each checked by running the chapter's experiment at its sizes (tests/claims.py).

The short runs (60 and 30 steps) are the chapter's CI sizes; claims the chapter makes about 300 steps are
checked at 300 steps (marked slow), and so is every claim whose check takes more than a few seconds: those
read off the 30-step table (a 20 s fixture, which would be a sixth of `make quick`), those read off the
bandwidth sweeps (5 s), and the 60-step accuracy checks of top-k, threshold and int8 (3-4 s each). Accuracy bounds are margins stated for every seed tried, wire bytes and
crossovers are derived from the ring's and the all-gather's closed forms, never fitted to one run.
"""
import math

import pytest

from claims import claim
from netlab.dataparallel import train
from netlab.compress import pays, table
from netlab.compress.training import run_training

RANKS = 4
SEEDS = (0, 1)


def accuracy(method, steps, seed=0, **options):
    return run_training(method, ranks=RANKS, steps=steps, seed=seed, **options)


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


@pytest.fixture(scope="module")
def short():
    """The chapter's table at its CI length, 30 steps, seed 0; and the fp32 baseline beside it."""
    rows = table.method_table(table.for_steps(30)[1:], ranks=RANKS, steps=30)
    return {r["method"]: r for r in rows}, accuracy("none", 30)


@pytest.mark.slow           # the 30-step table (fixture short): about 20 s, in make test only
@claim("ch4.codec-charged")
def test_qsgd_steps_slower_than_fp32_at_1gbit_and_topk_faster(short):
    rows, base = short
    assert rows["qsgd (bits=4)"]["step_s"] > base.step_s > rows["topk (ratio=0.01)"]["step_s_ef"]
    assert rows["randomk (ratio=0.1)"]["step_s"] > base.step_s


@pytest.mark.slow           # the 30-step table (fixture short): about 20 s, in make test only
@claim("ch4.fp16-free")
def test_fp16_and_bf16_end_where_fp32_ends(short):
    rows, base = short
    for m in ("fp16", "bf16"):
        assert abs(rows[m]["accuracy"] - base.final_accuracy) <= 0.01


@pytest.mark.slow           # four runs: about 3 s
@claim("ch4.int8-trails-early")
def test_int8_trails_fp32_after_30_steps_for_every_seed():
    for seed in (0, 1, 2):
        assert accuracy("int8", 30, seed).final_accuracy < accuracy("none", 30, seed).final_accuracy, seed


@pytest.mark.slow           # the 30-step table (fixture short): about 20 s, in make test only
@claim("ch4.ef-rescues-biased")
def test_error_feedback_adds_more_than_ten_points_to_every_biased_compressor(short):
    rows, _ = short
    for m in ("sign", "majority", "topk (ratio=0.01)", "powersgd (rank=1)", "powersgd (rank=2)"):
        assert rows[m]["accuracy_ef"] > rows[m]["accuracy"] + 0.1, m


@pytest.mark.slow           # four 60-step runs: about 3.5 s
@claim("ch4.threshold-below-chance")
def test_threshold_without_error_feedback_ends_below_chance_and_recovers_with_it():
    for seed in SEEDS:
        alone = accuracy("threshold", 30, seed, tau=0.01)
        ef = accuracy("threshold", 30, seed, tau=0.01, error_feedback=True)
        assert alone.final_accuracy < 0.1 < ef.final_accuracy, seed


@pytest.mark.slow           # the 30-step table (fixture short): about 20 s, in make test only
@claim("ch4.dgc-beats-topk")
def test_dgc_without_error_feedback_trains_better_than_topk_alone(short):
    rows, _ = short
    dgc = next(r for m, r in rows.items() if m.startswith("dgc"))
    assert dgc["accuracy"] > rows["topk (ratio=0.01)"]["accuracy"]


@pytest.mark.slow           # the 30-step table (fixture short): about 20 s, in make test only
@claim("ch4.dgc-beats-fp32")
def test_dgc_with_error_feedback_beats_plain_sgd_fp32(short):
    rows, base = short
    dgc = next(r for m, r in rows.items() if m.startswith("dgc"))
    assert dgc["accuracy_ef"] > base.final_accuracy


@pytest.fixture(scope="module")
def long_base():
    return accuracy("none", 300)


@pytest.mark.slow
@claim("ch4.int8-catches-up")
def test_int8_ends_within_a_point_of_fp32_after_300_steps(long_base):
    assert abs(accuracy("int8", 300).final_accuracy - long_base.final_accuracy) <= 0.01


@pytest.mark.slow
@claim("ch4.unbiased-fine")
def test_qsgd_and_terngrad_end_within_a_point_of_fp32_after_300_steps_without_error_feedback(long_base):
    for method, options in (("qsgd", {"bits": 4}), ("terngrad", {})):
        assert abs(accuracy(method, 300, **options).final_accuracy - long_base.final_accuracy) <= 0.01, method


@pytest.mark.slow
@claim("ch4.powersgd-ef-within-a-point")
def test_powersgd_rank_1_and_2_with_error_feedback_end_within_a_point_of_fp32_after_300_steps(long_base):
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
