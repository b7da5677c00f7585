"""Trace export and summaries; the `netlab step` command line, its JSON and its errors."""
import json
import math
import os
import shutil
import subprocess
import sys

import pytest
import torch

import netlab


def staged(comm):
    """rank 0 computes 1 ms then sends 1 MB to rank 1, which computes 3 ms first."""
    t = torch.zeros(1 << 18)
    comm.compute_for(seconds=1e-3 if comm.rank == 0 else 3e-3)
    if comm.rank == 0:
        comm.send(t, 1)
    else:
        comm.recv(t, 0)


def test_summary_and_chrome_trace(tmp_path):
    res = netlab.run(staged, ranks=2, network=netlab.network("10Gbit/s", "5us"))
    msg = 5e-6 + (1 << 20) / 1.25e9
    s0, s1 = res.trace.summary()
    assert s0["total_s"] == pytest.approx(1e-3 + msg) and s0["compute_s"] == pytest.approx(1e-3)
    assert s1["total_s"] == pytest.approx(3e-3)                # the data arrived while it computed
    assert s1["idle_frac"] == pytest.approx(0.0, abs=1e-12)
    assert s0["idle_frac"] == pytest.approx(msg / (1e-3 + msg))
    assert s0["bytes_sent"] == s1["bytes_recv"] == 1 << 20
    assert res.trace.message_pattern() == [(0, 1, 1 << 20)]
    doc = json.load(open(res.trace.save(str(tmp_path / "t.json"))))
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["cat"] for e in spans} == {"compute", "send", "recv"}
    send = next(e for e in spans if e["cat"] == "send")
    assert send["ts"] == pytest.approx(1000.0) and send["dur"] == pytest.approx(msg * 1e6)


def test_step_command_prints_json(run_cli):
    code, stdout, stderr = run_cli("step", "--ranks", "8", "--bandwidth", "10Gbit/s", "--latency", "5us", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert {"ranks", "compute_s", "comm_s", "total_s", "loss"} <= set(doc)
    assert doc["ranks"] == 8 and doc["clock"] == "virtual"
    assert doc["total_s"] == pytest.approx(doc["compute_s"] + doc["comm_s"], rel=1e-9)
    p, n = 8, doc["grad_bytes"]
    assert doc["comm_s"] == pytest.approx(2 * (p - 1) * 5e-6 + 2 * (p - 1) / p * n / 1.25e9, rel=1e-4)  # chunks differ by one element
    assert doc["loss"] == pytest.approx(math.log(10), abs=0.3)     # one step from init: about chance on 10 classes
    preset = json.loads(run_cli("step", "--ranks", "4", "--preset", "100GbE", "--json")[1])
    assert preset["bandwidth_Bps"] == 12.5e9


@pytest.mark.parametrize("args, name", [
    (["--ranks", "0"], "ranks"), (["--ranks", "99"], "ranks"), (["--bandwidth", "ten"], "bandwidth"),
    (["--bandwidth=-1Gbit/s"], "bandwidth"), (["--latency", "5parsec"], "latency"), (["--width", "3"], "width"),
    (["--batch", "0"], "batch"), (["--algo", "telepathy"], "algo"), (["--efficiency", "2"], "efficiency"),
])
def test_step_command_rejects_bad_values_in_one_line(args, name, run_cli):
    code, _, stderr = run_cli("step", *args)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"netlab step: error: {name}:"), stderr


@pytest.mark.slow                       # torchrun
@pytest.mark.skipif(shutil.which("torchrun", path=os.path.dirname(sys.executable)) is None, reason="no torchrun")
def test_same_command_under_torchrun_uses_the_wall_clock():
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    out = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", "-m", "netlab", "step", "--wall",
                          "--json", "--width", "64"], capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)                                  # printed once, by rank 0
    assert doc["ranks"] == 2 and doc["clock"] == "wall" and doc["total_s"] > 0
