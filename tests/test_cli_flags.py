"""Every flag of every command refuses bad values before any rank starts: one line naming the flag, exit 2.

The table crosses each flag with zero, negative, nan, inf, empty, overflowing, huge and wrong-unit
values; values that are legitimate for a flag (a latency of 0, no warm-up) are listed in ALLOWED
and left out. In process (``netlab.cli.main`` + capsys) with the rank pool replaced by a tripwire,
so "before any rank starts" is checked, not assumed; plus one subprocess case per command (the real
``python -m netlab`` entry path; congestion's is in test_congestion_cli.py).
"""
import subprocess
import sys

import pytest

import netlab
from netlab import cli
from netlab.runtime import shared

VALUES = {"zero": "0", "negative": "-1", "nan": "nan", "inf": "inf", "empty": "", "overflow": "1e400",
          "huge": "99999999999999999999", "unit": "10furlongs"}

# command -> (the other arguments it needs, its flags that take a value)
COMMANDS = {
    "step": ([], ["--ranks", "--bandwidth", "--latency", "--preset", "--width", "--layers", "--batch", "--algo",
                  "--device", "--efficiency", "--trace"]),
    "bench": (["allreduce"], ["--algo", "--ranks", "--sizes", "--bandwidth", "--latency", "--preset",
                              "--ranks-per-host", "--intra-preset", "--intra-bandwidth", "--intra-latency",
                              "--dtype", "--iters", "--warmup", "--chunks"]),
    "ps": ([], ["--workers", "--servers", "--sharding", "--partition-bytes", "--mode", "--staleness",
                "--bandwidth", "--latency", "--steps", "--width", "--batch", "--lr", "--momentum", "--stragglers",
                "--slowdown", "--straggle", "--eval-every", "--seed"]),
    "compress": ([], ["--method", "--ratio", "--bits", "--tau", "--rank", "--ranks", "--steps", "--bandwidth",
                      "--latency", "--device", "--efficiency", "--width", "--batch", "--lr", "--seed", "--codec"]),
    "sim": (["allreduce"], ["--topology", "--ranks", "--algo", "--size", "--placement", "--seed", "--routing",
                            "--link", "--bandwidth", "--latency", "--hop-latency", "--gpus-per-host",
                            "--nics-per-host", "--intra", "--servers"]),
}
KNOB_METHOD = {"--ratio": "topk", "--bits": "qsgd", "--tau": "threshold", "--rank": "powersgd"}

ALLOWED = {  # (command, flag, kind): legitimate values, not errors
    **{(c, "--latency", "zero"): 1 for c in COMMANDS},
    **{("step", "--trace", kind): 1 for kind in VALUES if kind != "empty"},   # all good file names
    **{(c, "--intra-latency", "zero"): 1 for c in COMMANDS},
    ("sim", "--hop-latency", "zero"): 1, ("bench", "--warmup", "zero"): 1, ("ps", "--staleness", "zero"): 1,
    ("ps", "--momentum", "zero"): 1, ("ps", "--stragglers", "zero"): 1, ("ps", "--seed", "zero"): 1,
    ("compress", "--seed", "zero"): 1, ("sim", "--seed", "zero"): 1,
}

CASES = [(command, flag, kind) for command, (_, flags) in COMMANDS.items() for flag in flags for kind in VALUES
         if (command, flag, kind) not in ALLOWED]


def argv(command, flag, value):
    needed, _ = COMMANDS[command]
    extra = ["--method", KNOB_METHOD[flag]] if command == "compress" and flag in KNOB_METHOD else []
    if command == "ps" and flag == "--staleness":
        extra = ["--mode", "ssp"]
    if command == "bench" and flag in ("--ranks-per-host", "--intra-bandwidth", "--intra-latency", "--intra-preset"):
        extra = ["--bandwidth", "10Gbit/s", "--ranks", "4"]
    return [command, *needed, *extra, f"{flag}={value}"]


def exit_code(args) -> int:
    try:
        return cli.main(args)
    except SystemExit as exc:                   # argparse's own errors
        return exc.code


@pytest.fixture
def no_ranks(monkeypatch):
    def tripwire(*args, **kwargs):
        raise AssertionError("a rank pool was started")
    monkeypatch.setattr(shared, "get_cluster", tripwire)
    monkeypatch.setattr(netlab.Cluster, "__init__", tripwire)


@pytest.mark.parametrize("command, flag, kind", CASES, ids=[f"{c}{f}={k}" for c, f, k in CASES])
def test_every_flag_refuses_bad_values_in_one_line(command, flag, kind, capsys, no_ranks):
    code = exit_code(argv(command, flag, VALUES[kind]))
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"netlab {command}: error: {flag[2:]}:"), lines[0]
    assert out == ""


@pytest.mark.parametrize("args, words", [
    (["bench", "allreduce", "--ranks", "2", "--sizes", "1T"], "sizes: too large"),
    (["bench", "allreduce", "--sizes=,"], "sizes:"),
    (["bench", "allreduce", "--sizes=1K:1M:nan"], "sizes:"),
    (["bench", "allreduce", "--sizes=1K:1M:abc"], "sizes:"),
    (["bench", "allreduce", "--ranks", "2", "--sizes", "1M", "--iters", "100000000"], "iters:"),
    (["bench", "allreduce", "--warmup", "100000000"], "warmup:"),
    (["bench", "allreduce", "--ranks", "2", "--sizes", "1K", "--bandwidth", "10Gbit/s", "--ranks-per-host", "3",
      "--algo", "hierarchical"], "ranks-per-host:"),
    (["step", "--batch", "10000000"], "batch:"),
    (["step", "--trace", "/nonexistent/dir/t.json"], "trace:"),
    (["step", "--wall", "--bandwidth", "10furlongs"], "bandwidth:"),
    (["ps", "--workers", "2", "--servers", "1", "--seed", "1180591620717411303424"], "seed:"),
    (["ps", "--eval-every", "0"], "eval-every:"),
    (["compress", "--seed", str(2**70)], "seed:"),
    (["compress", "--method", "threshold", "--tau=inf"], "tau:"),
    (["sim", "allreduce", "--seed", "-1"], "seed:"),
    (["sim", "allreduce", "--topology", "ring", "--ranks", "100000"], "ranks: too large"),
    (["sim", "allreduce", "--topology", "fattree:100000"], "topology: too large"),
    (["sim", "allreduce", "--topology", "fattree:64"], "topology: too large"),
    (["sim", "allreduce", "--gpus-per-host", "100000"], "gpus-per-host:"),
    (["sim", "allreduce", "--nics-per-host", "0"], "nics-per-host:"),
    (["sim", "allreduce", "--bandwidth", "1e400Gbit/s"], "bandwidth: must be a finite"),
    (["sim", "allreduce", "--latency", "1e300s"], "latency:"),
])
def test_the_cases_the_fault_campaign_found(args, words, capsys, no_ranks):
    code = exit_code(args)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"netlab {args[0]}: error: {words}"), lines[0]


@pytest.mark.slow                       # a fresh interpreter per command
@pytest.mark.parametrize("args, name", [
    (["step", "--width", "nan"], "width"), (["bench", "allreduce", "--sizes="], "sizes"), (["ps", "--lr", "inf"], "lr"),
    (["compress", "--ranks", "0"], "ranks"), (["sim", "allreduce", "--size", "-1"], "size"),
    (["assignment", "handout"], "ACTION"), (["grade", "/nonexistent-submissions"], "SUBMISSIONS"),
    (["analyze", "/nonexistent-trace.json"], "trace"),
])   # congestion's real-process case is in test_congestion_cli.py
def test_one_bad_flag_per_command_in_a_real_process(args, name):
    out = subprocess.run([sys.executable, "-m", "netlab", *args], capture_output=True, text=True, timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith(f"netlab {args[0]}: error: {name}:"), lines[0]
