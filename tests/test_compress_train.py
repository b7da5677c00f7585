"""Training with compression on real ranks (the chapter's findings), step times against closed forms,
the codec's device scaling, the ``netlab compress`` CLI and the chapter-4 panel."""
import json
import math

import pytest

import netlab
import trainings
from netlab.collectives import cost
from netlab import data
from netlab.dataparallel import train
from netlab.compress import pays, table
from netlab.compress.codec_cost import codec_seconds
from netlab.compress.training import run_training
from trainings import run_training as trained                   # each configuration once per session (trainings.py)

# Counts of run_training's default model, the MLP 64 -> 128 -> 128 -> 10:
D = train.parameter_count(128)                                  # 26,122 weights and biases (fp32)
K1 = round(0.01 * D)                                            # top-k at 1 %: 261 (int32 index + fp32 value each)
K10 = round(0.1 * D)                                            # random-k at 10 %: 2,612
PSGD1 = (128 + 64) + (128 + 128) + (10 + 128) + (128 + 128 + 10)  # PowerSGD r = 1: (n + m) per matrix, biases whole: 852


def same_accuracy_margin(accuracy: float) -> float:
    """How far two runs' test accuracies may differ when their models are equally good: each is a
    proportion over the same held-out digits (359), standard deviation sqrt(a(1-a)/n), so their
    difference has sqrt(2 a(1-a)/n); four of those (a one-sided normal tail of 3e-5) is the margin.
    At a = 0.95 that is 6.5 points: derived from the test set's size, not fitted to one seed's run,
    and still well inside the 10 points that top-k without error feedback loses."""
    return 4 * math.sqrt(2 * accuracy * (1 - accuracy) / data.size("test"))


@pytest.fixture(scope="module", autouse=True)
def _one_run_per_configuration(tmp_path_factory):
    trainings.share(tmp_path_factory)


@pytest.fixture(scope="module")
def baseline():
    # fp32 has no codec to charge (codec_seconds is 0 for "none" under every codec), so this is the run
    # codec="free" gives, and the one chapter 4's claims and the capstone read
    base = trained("none", ranks=4, steps=300)
    assert base.encode_s == base.decode_s == 0.0
    return base


@pytest.mark.slow                       # three 300-step trainings
def test_top_k_needs_error_feedback_and_matches_the_baseline_with_it(baseline):
    plain = trained("topk", ranks=4, steps=300, ratio=0.01, codec="free")
    ef = trained("topk", ranks=4, steps=300, ratio=0.01, error_feedback=True, codec="free")
    assert baseline.final_accuracy > 0.9
    assert plain.final_accuracy < baseline.final_accuracy - 0.1          # clearly worse without EF
    assert ef.final_accuracy > baseline.final_accuracy - same_accuracy_margin(baseline.final_accuracy)
    # 1 % of D elements = K1 int32 indices + K1 fp32 values; all-gathered to 3 other ranks
    assert ef.payload_bytes == K1 * 8 and ef.bytes_per_step == 3 * K1 * 8
    assert ef.compression_ratio == pytest.approx(baseline.dense_bytes / (K1 * 8))
    assert ef.step_s < baseline.step_s                                   # at 1 Gbit/s it pays


@pytest.mark.slow
def test_rescaled_random_k_diverges_with_error_feedback_and_trains_without():
    ef = trained("randomk", ranks=4, steps=100, ratio=0.1, error_feedback=True, codec="free")
    plain = trained("randomk", ranks=4, steps=100, ratio=0.1, codec="free")
    assert ef.diverged is not None and ef.final_accuracy < 0.3
    assert plain.diverged is None and plain.final_accuracy > 0.7
    assert plain.bytes_per_step == pytest.approx(2 * 3 / 4 * K10 * 4, abs=2 * 3 * 4)   # shared indices: all-reduced


@pytest.mark.slow                       # three 300-step trainings
def test_powersgd_rank_one_matches_the_baseline_with_error_feedback_only():
    base = trained("none", ranks=2, steps=300, codec="free")
    ef = trained("powersgd", ranks=2, steps=300, rank=1, error_feedback=True, codec="free")
    plain = trained("powersgd", ranks=2, steps=300, rank=1, codec="free")
    assert ef.final_accuracy > base.final_accuracy - same_accuracy_margin(base.final_accuracy)
    assert plain.final_accuracy < base.final_accuracy - 0.1
    assert ef.compression_ratio == pytest.approx(D / PSGD1)             # P, Q of three layers + biases


def test_step_times_equal_the_closed_form_on_every_bandwidth():
    bws = ["100Mbit/s", "10Gbit/s"]
    rows = pays.step_times(["none", ("topk", {"ratio": 0.01})], bws, ranks=4, width=128, codec="free")
    dev = netlab.device("cpu-core")
    compute = dev.seconds(train.step_flops(128, 2, 32)) + dev.seconds(2 * train.parameter_count(128))
    for bw in bws:
        net = netlab.network(bw, "5us")
        base = next(r for r in rows if r["bandwidth"] == bw and r["method"] == "none")
        topk = next(r for r in rows if r["bandwidth"] == bw and r["method"] == "topk")
        ring = cost.time("allreduce", "ring", 4, train.grad_bytes(128), network=net)
        assert base["step_s"] == pytest.approx(compute + ring, rel=0.01)
        assert topk["step_s"] == pytest.approx(compute + 3 * net.nic.time(K1 * 8), rel=0.01)   # ring all-gather


def test_crossover_is_exact_for_affine_step_times():
    def t(a, b, bw):
        return a + b / bw
    bws = [1e7, 1e8, 1e9, 1e10]
    rows = [{"label": lab, "bandwidth_Bps": bw, "step_s": t(a, b, bw)}
            for lab, a, b in (("none", 1e-4, 1e5), ("x", 5e-4, 1e3)) for bw in bws]
    assert pays.crossover(rows, "x") == pytest.approx((1e5 - 1e3) / (5e-4 - 1e-4))
    assert pays.allgather_crossover(1e6, 1e4, 4, 0.0, codec_s=1e-3) == pytest.approx((1.5e6 - 3e4) / 1e-3)
    assert pays.allgather_crossover(1e6, 1e4, 4, 1e-3, codec_s=1e-3) == math.inf


def test_codec_cost_default_is_the_per_element_model_and_never_measures(monkeypatch):
    from netlab.compress import codec_cost
    from netlab.compress.codec_calibration import FLOPS_PER_ELEMENT

    def no_measuring(*args, **kwargs):
        raise AssertionError("the default codec cost must not time anything on this machine")
    monkeypatch.setattr(codec_cost, "measure_here", no_measuring)
    dev = netlab.device("cpu-core")
    d = netlab.dataparallel.train.parameter_count(1024, 2)
    enc, dec = FLOPS_PER_ELEMENT[("topk (ratio=0.01)", True)]
    got = codec_seconds("topk", 4, 1024, 2, batch=32, device=dev, error_feedback=True, ratio=0.01)
    assert got == (enc * d / (dev.peak_flops * dev.efficiency), dec * d / (dev.peak_flops * dev.efficiency))
    assert codec_seconds("topk", 4, 1024, 2, batch=32, device=dev, error_feedback=True, ratio=0.01) == got  # on repeat
    r1 = codec_seconds("powersgd", 4, 128, 2, batch=32, device=dev, rank=1)
    r4 = codec_seconds("powersgd", 4, 128, 2, batch=32, device=dev, rank=4)            # not calibrated: x4
    assert r4[0] == pytest.approx(4 * r1[0])
    with pytest.raises(ValueError, match="codec"):
        codec_seconds("topk", 4, 128, 2, batch=32, device=dev, codec="guess", ratio=0.01)


def test_training_times_are_the_same_under_load_and_on_repeat():
    import subprocess
    import sys
    first = run_training("qsgd", ranks=4, steps=20, bits=4)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = run_training("qsgd", ranks=4, steps=20, bits=4)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert loaded.step_s == first.step_s and loaded.time_s == first.time_s and first.encode_s > 0
    assert first.setup["codec"] == "model"


def test_the_method_grid_and_the_crossover_sweep_charge_the_same_step():
    spec = ("terngrad", {}, True)
    row = table.method_table([spec[:2]], ranks=4, steps=3)[0]
    sweep = pays.step_times([spec], ["1Gbit/s"], ranks=4)[0]
    assert row["codec"] == sweep["codec"] == "model"
    assert row["step_s_ef"] == pytest.approx(sweep["step_s"], rel=1e-6)


def test_codec_cost_measured_here_is_scaled_by_the_device():
    slow = codec_seconds("topk", 4, 128, 2, batch=32, device=netlab.device("cpu-core"), codec="measured", ratio=0.01)
    fast = codec_seconds("topk", 4, 128, 2, batch=32, device=netlab.device("A100-fp32"), codec="measured", ratio=0.01)
    assert slow[0] > 0 and slow[1] > 0
    ratio = netlab.DEVICES["A100-fp32"][0] / netlab.DEVICES["cpu-core"][0]
    assert slow[0] / fast[0] == pytest.approx(ratio) and slow[1] / fast[1] == pytest.approx(ratio)
    assert codec_seconds("none", 4, 128, 2, batch=32, device=netlab.device("cpu-core")) == (0.0, 0.0)


def test_cli_prints_the_issue_keys(capsys):
    from netlab.cli import main
    assert main(["compress", "--method", "topk", "--ratio", "0.01", "--error-feedback", "--ranks", "2",
                 "--steps", "30", "--codec", "free", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("accuracy", "baseline_accuracy", "bytes_per_step", "compression_ratio", "step_s"):
        assert key in out
    assert 0 <= out["accuracy"] <= 1 and 0 <= out["baseline_accuracy"] <= 1
    assert out["bytes_per_step"] == K1 * 8                               # 2 ranks: one payload each way
    assert out["compression_ratio"] == pytest.approx(4 * D / (K1 * 8))
    assert out["step_s"] < out["baseline_step_s"]


@pytest.mark.parametrize("argv, param", [
    (["--method", "zip"], "method"), (["--ratio", "0"], "ratio"), (["--method", "powersgd", "--ratio", "0.1"], "ratio"),
    (["--method", "qsgd", "--bits", "3"], "bits"), (["--steps", "0"], "steps"), (["--ranks", "0"], "ranks"),
    (["--bandwidth", "fast"], "bandwidth"), (["--method", "powersgd", "--rank", "0"], "rank"),
])
def test_cli_bad_input_is_one_line_naming_the_parameter(capsys, argv, param):
    from netlab.cli import main
    assert main(["compress", "--steps", "5", "--ranks", "2", "--codec", "free"] + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"netlab compress: error: {param}:")


@pytest.mark.slow
def test_panel_runs_headless_and_follows_the_method():
    from netlab.ui.ch4 import CompressPanel
    panel = CompressPanel(method="topk", ranks=2, steps=20, sweep=["100Mbit/s", "100Gbit/s"])
    assert panel.last is not None and panel.last["result"].method == "topk"
    assert not panel.controls["ratio"].disabled and panel.controls["rank"].disabled
    panel.controls["method"].value = "powersgd"
    assert panel.last["result"].method == "powersgd" and panel.controls["ratio"].disabled
    assert not panel.controls["rank"].disabled
    assert len(panel.last["rows"]) == 4                                  # 2 methods x 2 bandwidths
