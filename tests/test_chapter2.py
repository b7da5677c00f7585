"""Chapter 2's pieces: ZeRO's sharded step, the ring snapshots, the panel, the bench command."""
import json
import subprocess
import sys

import pytest
import torch
from torch.nn.utils import parameters_to_vector

import netlab
from netlab.collectives import cost, zero
from netlab import data
from netlab.dataparallel import train
from netlab.collectives import experiments
from netlab.ui import ch2

NET = netlab.network("10Gbit/s", "5us")


def single_process_adam(ranks, width=256, batch=16, lr=1e-3):
    """torch.optim.Adam's first step in one process, on the gradient of the whole global batch."""
    model = train.make_model(width, 2, seed=0)
    x, y = data.load("train")
    idx = torch.cat([train.batch_indices(0, r, ranks, batch, n=len(y)) for r in range(ranks)])
    torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    opt.step()
    return parameters_to_vector(model.parameters()).detach()


@pytest.mark.slow                       # two ZeRO runs
def test_zero_moves_the_all_reduce_bytes_and_keeps_a_pth_of_the_state():
    kw = dict(ranks=4, network=NET, device=netlab.device("cpu-core"))
    sharded = netlab.run(zero.sharded_adam_step, sharded=True, **kw)
    plain = netlab.run(zero.sharded_adam_step, sharded=False, **kw)
    assert sum(v["bytes_sent"] for v in sharded.values) == sum(v["bytes_sent"] for v in plain.values)
    assert sharded.trace.makespan == pytest.approx(plain.trace.makespan, rel=1e-9)
    reference = single_process_adam(4)
    for s, p in zip(sharded.values, plain.values):
        assert s["state_bytes"] * 4 == pytest.approx(p["state_bytes"], abs=16)    # 1/p, up to rounding
        # Adam's first step moves each weight by lr * g / (|g| + eps): for a gradient near zero the last-bit
        # difference between two summation orders (a reduce-scatter's, an all-reduce's, one process's
        # full-batch backward) is amplified up to lr (1e-3). One such weight in 85,002 moved 4.8e-6 on some
        # CPUs; 1 % of lr bounds that, and a wrong shard (a different weight's gradient) would miss by about lr.
        torch.testing.assert_close(torch.from_numpy(s["params"]), reference, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(torch.from_numpy(p["params"]), reference, rtol=1e-5, atol=1e-5)


def test_ring_snapshots_show_the_textbook_states():
    p = 4
    shots = experiments.ring_snapshots(p)
    assert len(shots) == 2 * (p - 1) + 1
    assert shots[0] == [[1 << r] * p for r in range(p)]                  # each rank: only itself
    after_rs = shots[p - 1]
    for r in range(p):
        assert after_rs[r][(r + 1) % p] == (1 << p) - 1                 # rank r owns chunk r+1, summed
    assert all(cell == (1 << p) - 1 for row in shots[-1] for cell in row)


def test_examples_agree_with_their_definitions():
    values = experiments.example("allreduce", ranks=3, n=2)
    assert all(after == [60, 63] for _, after in values)                 # 10+20+30, 11+21+31
    gathered = experiments.example("allgather", ranks=3)
    assert all(after == [10, 20, 30] for _, after in gathered)


@pytest.mark.slow
def test_panel_measures_every_algorithm_beside_its_formula(capsys):
    panel = ch2.CollectivePanel(ranks=4, size="1M", bandwidth="10Gbit/s")
    rows = panel.rows
    assert {r["algo"] for r in rows} == set(experiments.FLAT)
    for r in rows:
        assert r["time_s"] == pytest.approx(r["predicted_s"], rel=0.01)
    panel.controls["ranks"].value = 8
    assert panel.rows[0]["ranks"] == 8


@pytest.mark.slow
def test_panel_answers_first_with_the_chosen_algorithm_then_all_and_again_at_once():
    """A new setting shows the chosen algorithm measured (bench's own rows) over every formula
    (cost.time), then every algorithm measured; a message size or algorithm seen at that setting
    answers in one stage from the same measurement."""
    from netlab.collectives.bench import bench
    from netlab.units import parse_bytes

    panel = ch2.CollectivePanel(ranks=3, size="64K", bandwidth="10Gbit/s", algo="tree")
    sizes = [parse_bytes(s) for s in ch2.SIZES]
    assert panel.stages == 2                              # the start: a first answer, then the full one
    assert len(list(panel.render(panel.values()))) == 1   # the same setting again: one answer, measured
    panel._measured.clear()
    stages = panel.render(panel.values())
    text, _ = next(stages)
    rows = panel.rows
    tree = [r for r in rows if r["algo"] == "tree"]
    assert [r["time_s"] for r in tree] == [r["time_s"] for r in bench("allreduce", "tree", 3, sizes, network=NET)]
    others = [r for r in rows if r["algo"] != "tree"]
    assert {r["algo"] for r in others} == set(experiments.FLAT) - {"tree"}
    assert all(r["time_s"] != r["time_s"] for r in others)           # not measured yet (NaN): no marker
    assert all(r["predicted_s"] == cost.time("allreduce", r["algo"], 3, r["bytes"], network=NET) for r in others)
    assert "fastest: follows" in text
    text, _ = next(stages)
    assert "fastest: " in text and "follows" not in text
    assert all(r["time_s"] == pytest.approx(r["predicted_s"], rel=0.01) for r in panel.rows)
    with pytest.raises(StopIteration):
        next(stages)
    panel.controls["algo"].value = "ring"
    assert panel.stages == 1 and panel.text.splitlines()[0].startswith("ring all-reduce of 64.0 KiB on 3 ranks")


@pytest.mark.slow                       # 19 sizes up to 256 MB on 8 ranks
def test_bench_command_json_and_check(run_cli):
    code, stdout, stderr = run_cli("bench", "allreduce", "--ranks", "8", "--algo", "ring", "--bandwidth", "100Gbit/s",
                                   "--latency", "5us", "--sizes", "1K:256M", "--json")
    assert code == 0, stderr
    rows = json.loads(stdout)
    assert len(rows) == len(range(10, 28 + 1))                          # 1K:256M: powers of two 2**10 .. 2**28
    assert {"collective", "algo", "ranks", "bytes", "time_s", "predicted_s", "algbw_GBps", "busbw_GBps"} <= set(rows[0])
    for r in rows:
        assert r["time_s"] == pytest.approx(r["predicted_s"], rel=0.01)
    assert rows[-1]["busbw_GBps"] / 12.5 > 0.99                         # busbw -> link bandwidth
    code, stdout, stderr = run_cli("bench", "reduce_scatter", "--ranks", "5", "--algo", "all", "--preset", "25GbE",
                                   "--sizes", "1K,1M", "--check", "--dtype", "int32")
    assert code == 0, stderr
    assert stdout.count(" ok") == 4
    code, _, stderr = run_cli("bench", "allreduce", "--algo", "torch", "--bandwidth", "1Gbit/s")
    assert code == 2 and stderr.strip().startswith("netlab bench: error: algo:")


def test_wall_clock_bench_against_torch_runs():
    from netlab.collectives.bench import Timing, bench
    rows = bench("allreduce", "torch", 2, [4096], timing=Timing(iters=2)) + bench("allreduce", "ring", 2, [4096], timing=Timing(iters=2))
    assert all(r["time_s"] > 0 and r["predicted_s"] is None and r["clock"] == "wall" for r in rows)
    assert cost.busbw("allreduce", 2, 4096, rows[0]["time_s"]) > 0
    for collective in ("broadcast", "reduce", "allgather", "reduce_scatter"):     # torch's own, for every one
        assert bench(collective, "torch", 2, [4096], timing=Timing(iters=1))[0]["time_s"] > 0


@pytest.mark.slow                       # torchrun
def test_bench_under_torchrun_measures_the_real_transport():
    import os
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    out = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", "-m", "netlab", "bench", "allreduce",
                          "--algo", "ring", "--sizes", "4K,64K", "--check", "--json"],
                         capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads(out.stdout)                                        # printed once, by rank 0
    assert [r["check"] for r in rows] == ["ok", "ok"] and all(r["clock"] == "wall" for r in rows)
