"""The commands whose options mirror a panel (sim, congestion, step, ps, compress, parallel), over
their option space: every option drawn jointly (Hypothesis) from the panel's values plus values
beside them (zero, too many, a name that does not exist), run in process (``netlab.cli.main``).

Each setting either prints its result (exit 0, stdout not empty, nothing on stderr) or refuses in one
line ``netlab CMD: error: FLAG: ...`` naming one of the command's flags, with exit status 2; an
exception escaping ``main`` (an internal error, a traceback) fails the test. Derandomized, few
examples per command (the ones that train on real ranks get the fewest), about a minute in all on two
idle cores. Sizes are kept to what a panel offers, so every run that is not refused ends in seconds.
"""
import contextlib
import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netlab import cli

pytestmark = pytest.mark.slow

NONE = object()            # the flag left out
BAD_VALUE = re.compile(r"^netlab (\w+): error: ([\w-]+): \S")

OPTIONS = {   # flag: values, or (the panel's values, values beside them); "" is the positional argument
    "sim": {
        "": ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "ps", "alltoall"],
        "--topology": (["fattree:4", "fattree:8", "spineleaf:8:4:1", "spineleaf:8:4:4", "spineleaf:2:4:1", "star",
                        "ring", "torus", "torus:4x4"], ["fattree:3", "mesh"]),
        "--ranks": ([NONE, 1, 2, 8, 16, 64, 256], [0, 100000]),
        "--algo": ([NONE, "ring", "tree", "hierarchical", "hierarchical_rail", "recursive_doubling", "concurrent"],
                   ["fastest"]),
        "--size": (["1M", "64M", "256M"], ["0", "1T", "lots"]),
        "--placement": (["ordered", "shuffled"], ["random"]),
        "--seed": ([0, 3], [-1]),
        "--routing": (["ecmp", "spray", "adaptive"], ["magic"]),
        "--gpus-per-host": ([1, 2, 4, 8], [0]),
        "--nics-per-host": ([NONE, 1, 2, 4, 8], [3]),
        "--no-rail": [False, True],
        "--servers": ([1, 2, 4], [0]),
        "--hop-latency": (["0", "1us"], ["-1us"]),
    },
    "congestion": {
        "": ["incast", "jitter"],
        "--senders": ([1, 4, 16], [0, 2000]),
        "--block": (["16K", "64K", "256K"], ["0", "1T"]),
        "--bandwidth": (["1Gbit/s", "10Gbit/s"], ["0"]),
        "--buffer": ([NONE, "16K", "64K", "1M"], ["0", "1K"]),
        "--transport": ([NONE, "reno", "cubic", "dctcp", "dcqcn", "ideal", "nscc", "rccc"], ["quic"]),
        "--rto-min": (["200ms", "10ms", "1ms", "200us"], ["0"]),
        "--rounds": ([1, 2], [0]),
        "--ecn-k": [NONE, "5K", "30K"],
        "--pfc": [False, True],
        "--seed": ([0, 7], [-1]),
        "--background": ([NONE, 0.0, 0.3], [1.5]),
        "--trim": [False, True],
        "--multipath": [NONE, "ecmp", "spray", "reps"],
        "--topology": [NONE, "star", "spineleaf:2:4:1", "fattree:4"],
    },
    "step": {
        "--ranks": ([1, 2, 4], [0, 17]),
        "--bandwidth": ([NONE, "1Gbit/s", "10Gbit/s"], ["0"]),
        "--latency": [NONE, "5us", "100us"],
        "--preset": [NONE, "100GbE"],
        "--width": ([64, 128, 512], [0]),
        "--layers": [1, 2, 4],
        "--batch": ([8, 32, 128], [0]),
        "--algo": (["ring", "tree", "recursive_doubling"], ["fastest"]),
        "--device": ["cpu-core", "A100-fp32"],
        "--bucket": [NONE, "1", "100K"],
        "--overlap": [False, True],
    },
    "ps": {
        "--workers": [1, 2, 4, 8],
        "--servers": ([1, 2, 4], [0]),
        "--sharding": (["range", "hash"], ["round-robin"]),
        "--colocated": [False, True],
        "--mode": (["bsp", "ssp", "async"], ["eventual"]),
        "--staleness": ([0, 2], [-1]),
        "--bandwidth": ["1Gbit/s", "10Gbit/s"],
        "--steps": [2, 4],
        "--width": [64, 128],
        "--stragglers": [0, 1, 3],
        "--slowdown": ([1.0, 4.0], [0.5]),
        "--straggle": ["random", "fixed"],
        "--eval-every": [1, 2, 10],
        "--seed": [0, 1],
    },
    "compress": {
        "--method": (["none", "fp16", "int8", "qsgd", "terngrad", "sign", "topk", "randomk", "threshold", "dgc",
                      "powersgd"], ["zip"]),
        "--ratio": ([NONE, 0.01, 0.3], [2.0]),
        "--bits": [NONE, 2, 4],
        "--tau": [NONE, 0.01],
        "--rank": [NONE, 1, 4],
        "--error-feedback": [False, True],
        "--ranks": [1, 2, 4],
        "--steps": [2, 4],
        "--bandwidth": ["1Gbit/s", "100Gbit/s"],
        "--codec": ["model", "free"],
        "--width": [64, 128],
        "--seed": [0, 2],
    },
    "parallel": {
        "--mode": ["dp", "tp", "pp", "all"],
        "--ranks": ([1, 2, 4], [0]),
        "--bandwidth": ["1Gbit/s", "10Gbit/s"],
        "--width": ([64, 256], [255]),
        "--layers": [1, 2, 4],
        "--batch": ([32, 256], [7]),
        "--micro-batches": [1, 4, 16],
    },
}


def values_of(option, bad: bool):
    """A flag's values: the panel's, and with `bad` the values beside them too."""
    if isinstance(option, list):
        return st.sampled_from(option)
    return st.sampled_from(option[0] + option[1] if bad else option[0])


def argv_of(command, chosen):
    argv = [command]
    for flag, value in chosen.items():
        if value is NONE or value is False:
            continue
        if flag == "":
            argv.insert(1, value)
        elif value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    return argv


def flags_of(command):
    """The command's own option names, as its errors write them (no dashes in front)."""
    parser = cli.Parser(prog="netlab")
    sub = parser.add_subparsers(dest="command")
    import importlib
    importlib.import_module(f"netlab.cli.{command}").add_parser(sub.add_parser(command))
    options = sub.choices[command]._actions
    return {s.lstrip("-") for a in options for s in a.option_strings} | {a.dest for a in options}


def explore(command, examples, bad):
    flags = flags_of(command)
    seen = {0: 0, 2: 0}
    space = st.fixed_dictionaries({flag: values_of(v, bad) for flag, v in OPTIONS[command].items()})

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(space)
    def one(chosen):
        argv = argv_of(command, chosen)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:                        # argparse's own refusals (a choice, a type)
                code = exc.code
        out, err = out.getvalue(), err.getvalue()
        assert code in (0, 2), (argv, code, err)
        if code == 0:
            assert out.strip() and not err.strip(), (argv, err)
        else:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err, (argv, err)
            m = BAD_VALUE.match(lines[0])
            assert m and m.group(1) == command and m.group(2) in flags, (argv, lines[0])
        seen[code] += 1
    one()
    return seen


@pytest.mark.parametrize("command, examples", [("sim", 30), ("congestion", 20), ("step", 6), ("ps", 4),
                                               ("compress", 4), ("parallel", 5)])
def test_every_setting_of_the_panels_values_runs_or_is_refused_in_one_line_naming_a_flag(command, examples):
    seen = explore(command, examples, bad=False)
    assert seen[0], seen                                          # not every setting is refused


@pytest.mark.parametrize("command", list(OPTIONS))
def test_values_beside_the_panels_are_refused_in_one_line_naming_a_flag(command):
    explore(command, 15, bad=True)


def test_compress_on_one_rank_says_nothing_is_sent_instead_of_dividing_by_zero(capsys):
    """Found by the property test above: one rank sends no bytes, so there is no wire ratio."""
    assert cli.main(["compress", "--method", "topk", "--ranks", "1", "--steps", "2", "--width", "64", "--json"]) == 0
    import json
    row = json.loads(capsys.readouterr().out)
    assert row["bytes_per_step"] == row["baseline_bytes_per_step"] == 0 and row["wire_ratio"] is None
