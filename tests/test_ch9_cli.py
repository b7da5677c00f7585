"""``netlab congestion incast`` with chapter 9's flags: the numbers of ``fabric.ethernet.incast``, and one
clear line with exit 2 for every combination the fabric refuses."""
from dataclasses import replace
import json

import pytest

from netlab.cli import main
from netlab.fabric import ethernet as E

KB = 1024


def test_a_trimmed_incast_on_the_command_line_is_the_library_run(capsys):
    assert main(["congestion", "incast", "--senders", "8", "--block", "64K", "--buffer", "32K", "--transport",
                 "nscc", "--trim", "--rounds", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    alone = E.incast(8, 64 * KB, switch=replace(E.INCAST, transport="nscc", trim=True, buffer=32 * KB))
    assert row["completion_s"]["p50"] == alone.time_s and row["trims"] == alone.summary()["trims"] > 0
    assert row["timeouts"] == 0 and row["trim"] is True


def test_credits_sprayed_over_a_fat_tree_keep_the_receivers_queue_small(capsys):
    assert main(["congestion", "incast", "--senders", "15", "--block", "64K", "--transport", "rccc", "--topology",
                 "fattree:4", "--multipath", "spray", "--rounds", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["max_queue_bytes"] <= 4 * 1500 and row["drops"] == row["trims"] == 0


@pytest.mark.parametrize("args, name", [
    (["--transport", "nscc", "--trim", "--pfc"], "trim"),
    (["--transport", "reno", "--trim"], "trim"),
    (["--transport", "rccc", "--credit-rate", "0"], "credit-rate"),
    (["--transport", "nscc", "--credit-rate", "0.5"], "credit-rate"),
    (["--transport", "nscc", "--multipath", "hash"], "multipath"),
    (["--transport", "nscc", "--topology", "torus:4x4"], "topology"),
    (["--fail", "leaf0->spine0"], "fail"),
    (["--fail-at", "1ms"], "fail-at"),
    (["--transport", "nscc", "--topology", "spineleaf:2:4:1", "--senders", "7", "--fail", "leaf1->spine0",
      "--fail-at", "2s"], "failure"),
    (["--transport", "nscc", "--topology", "spineleaf:2:4:1", "--senders", "7", "--fail", "leaf9->spine0"], "failure"),
    (["--transport", "nscc", "--planes", "0"], "planes"),
    (["--transport", "nscc", "--background", "0.3"], "background"),
    (["--real", "--trim"], "trim"),
])
def test_bad_combinations_are_one_line_naming_the_parameter_exit_2(args, name, capsys):
    assert main(["congestion", "incast", "--rounds", "1", "--block", "64K", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"netlab congestion: error: {name}:"), err
