"""``netlab parallel``: bad input is one line naming the flag with exit status 2, before any rank starts;
good input prints bytes_per_step and step_s, the same numbers the library measures."""
import json

import pytest

from netlab import cli
from netlab.codesign.parallel import measure
from netlab.runtime import shared


def exit_code(args) -> int:
    try:
        return cli.main(args)
    except SystemExit as exc:                   # argparse's own errors
        return exc.code


@pytest.mark.parametrize("args, flag", [
    (["--mode", "mp"], "mode"), (["--ranks", "0"], "ranks"), (["--ranks", "nan"], "ranks"),
    (["--bandwidth", "10furlongs"], "bandwidth"), (["--latency", "-1us"], "latency"),
    (["--bandwidth", ""], "bandwidth"),
    (["--mode", "tp", "--ranks", "3"], "width"), (["--mode", "pp", "--ranks", "6"], "ranks"),
    (["--mode", "pp", "--micro-batches", "0"], "micro-batches"), (["--mode", "pp", "--micro-batches", "3"], "batch"),
    (["--batch", "0"], "batch"), (["--batch", "99999999999999999999"], "batch"), (["--width", "1e400"], "width"),
    (["--layers", "9"], "layers"), (["--efficiency", "nan"], "efficiency"), (["--device", "abacus"], "device"),
])
def test_bad_flags_are_one_line_exit_2_before_any_rank(args, flag, capsys, monkeypatch):
    def tripwire(*a, **kw):
        raise AssertionError("a rank pool was started")
    monkeypatch.setattr(shared, "run_on_pool", tripwire)
    code = exit_code(["parallel", *args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"netlab parallel: error: {flag}:"), lines[0]
    assert out == ""


def test_json_prints_the_measured_bytes_and_step_time(capsys):
    args = ["--ranks", "2", "--width", "64", "--layers", "2", "--batch", "64", "--bandwidth", "1Gbit/s"]
    assert cli.main(["parallel", "--mode", "tp", *args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    ref = measure("tp", ranks=2, width=64, layers=2, batch=64, bandwidth="1Gbit/s")
    assert got["bytes_per_step"] == ref.bytes_per_step
    assert got["step_s"] == ref.step_s
