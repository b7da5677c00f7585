"""``python -m netlab <command>``: the command-line twins of the chapters' widgets.

Each command lives in its own module with ``add_parser(subparsers)`` and ``main(args)``. Bad input
gets one line naming the parameter and exit status 2, as argparse does for its own errors.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys

from .. import validate

COMMANDS = {  # name -> help; the module netlab.cli.<name> defines add_parser(parser) and main(args)
    "step": "one data-parallel training step: compute, communication and total time (chapter 1)",
    "bench": "an nccl-tests-style benchmark of a collective: time, algbw, busbw, formula (chapter 2)",
    "ps": "parameter-server training: step time, per-server bytes, accuracy (chapter 3)",
    "compress": "gradient compression: accuracy, bytes per step, step time (chapter 4)",
    "sim": "collectives on thousands of simulated ranks over a modelled fabric (chapter 5)",
    "congestion": "incast through a switch with a buffer, ECN and PFC: goodput, drops, timeouts (chapter 6)",
    "assignment": "hand out the chapters' exercises: a student version, or an nbgrader course",
    "grade": "grade a folder of submissions on real ranks, each answer sandboxed (CSV and JSON)",
    "challenge": "the challenge's tasks: a collective on a fixed cluster, lowest virtual time wins",
    "analyze": "where a traced step's time went: breakdown, overlap, straggler, NIC utilisation (chapter 7)",
    "parallel": "data, tensor or pipeline parallelism: bytes per step and step time on real ranks (chapter 8)",
}


def emit(obj, as_json: bool, text: str) -> None:
    """Print on one rank only (rank 0 under torchrun): JSON for machines, or the text table."""
    if int(os.environ.get("RANK", "0")) != 0:
        return
    print(json.dumps(obj, indent=2) if as_json else text)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in netlab's one-line form: 'netlab step: error: ranks: ...'."""

    def error(self, message):
        message = re.sub(r"^argument (?:--)?([\w-]+)(?:/[\w-]+)*: ", r"\1: ", message)
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Bar:
    """A tqdm bar on stderr that shows itself only on long work (after 1 s) and on a terminal."""

    def __init__(self, total: float, desc: str, unit: str):
        from tqdm import tqdm
        self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, delay=1.0, disable=None, leave=False,
                        file=sys.stderr)

    def to(self, done: float) -> None:
        """Move the bar to `done` (of its total): the work's own count, never a guess."""
        if self.bar.n != done:
            self.bar.update(done - self.bar.n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.close()


def progress_bar(total: float, desc: str, unit: str = "B") -> _Bar:
    """``with progress_bar(total_bytes, "incast") as bar: ... bar.to(done)``: progress on the command line."""
    return _Bar(total, desc, unit)


def flag_words(message: str) -> str:
    """A library error names its Python parameter ('intra_bandwidth: ...'); the CLI says its flag's name."""
    name, sep, rest = message.partition(":")
    return name.replace("_", "-") + sep + rest if sep and re.fullmatch(r"\w+", name) else message


def main(argv=None) -> int:
    parser = Parser(prog="netlab", description="netlab: the network side of distributed training. "
                    "Units: GB = 1e9 bytes, Gbit/s = 1e9 bit/s.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, help_text in COMMANDS.items():
        try:
            modules[name] = importlib.import_module(f"netlab.cli.{name}")
        except ModuleNotFoundError as exc:          # a chapter whose command is not written yet
            if exc.name != f"netlab.cli.{name}":
                raise
            continue
        modules[name].add_parser(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        if getattr(args, "seed", None) is not None:      # every command's --seed, by one rule
            validate.seed(args.seed)
        return modules[args.command].main(args) or 0
    except (ValueError, MemoryError) as exc:          # the library's checks name the parameter
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"netlab {args.command}: error: {flag_words(first)}", file=sys.stderr)
        return 2
