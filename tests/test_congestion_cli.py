"""``netlab congestion``: the JSON a script reads, and one clear line with exit 2 for bad input."""
import json
import subprocess
import sys

import pytest

from netlab.cli import main


def test_incast_json_reports_goodput_completion_drops_timeouts_marks_pauses(capsys):
    assert main(["congestion", "incast", "--senders", "4", "--block", "64K", "--bandwidth", "1Gbit/s",
                 "--buffer", "64K", "--transport", "reno", "--rto-min", "200ms", "--rounds", "2", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    for key in ("goodput_Bps", "drops", "timeouts", "marks", "pause_s"):
        assert key in row
    assert set(row["completion_s"]) >= {"p50", "p99"}
    assert 0 < row["goodput_Bps"] <= 1e9 / 8 and row["rounds"] == 2


def test_pfc_run_pauses_and_never_drops(capsys):
    assert main(["congestion", "incast", "--senders", "4", "--block", "256K", "--transport", "ideal",
                 "--pfc", "--rounds", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["drops"] == 0 and row["pause_s"] > 0
    assert row["completion_s"]["p50"] == pytest.approx(4 * 256 * 1024 / (1e9 / 8), rel=0.01)


@pytest.mark.parametrize("args, name", [
    (["--buffer=-1K"], "buffer"), (["--ecn-kmin", "10K", "--ecn-kmax", "5K"], "ecn-kmin"),
    (["--ecn-pmax", "0"], "ecn-pmax"), (["--ecn-pmax", "1.5"], "ecn-pmax"), (["--transport", "vegas"], "transport"),
    (["--pfc", "--xoff", "100K"], "xoff"), (["--pfc", "--buffer", "8K"], "pfc"), (["--pfc", "--xoff", "60K"], "pfc"),
    (["--rto-min", "0"], "rto-min"), (["--senders", "0"], "senders"),
])
def test_bad_input_is_one_line_naming_the_parameter_exit_2(args, name, capsys):
    assert main(["congestion", "incast", "--rounds", "1", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"netlab congestion: error: {name}:"), err


@pytest.mark.slow
def test_bad_input_from_the_shell_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "netlab", "congestion", "incast", "--pfc", "--xoff", "60K"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == proc.stderr.strip().splitlines()[0].strip() and "pfc:" in proc.stderr
