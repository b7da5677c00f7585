"""A chapter's claims, tied to the tests that check them.

A sentence in a chapter that states a measured fact ("the ring's time grows by three quarters from
4 to 8 ranks") carries an invisible marker in its markdown cell, right after the sentence:

    <!-- claim: ch2.ring-latency-grows -->

and exactly one test checks it, by running the same experiment at the chapter's CI sizes:

    from claims import claim

    @claim("ch2.ring-latency-grows")
    def test_ring_latency_grows_with_p():
        ...

`tests/test_claims_index.py` reads every chapter and every test file and fails when a marker has no
test, a test names a claim no chapter makes, or an id is used twice; so a sentence and its check
cannot drift apart unnoticed. A student's cells never assert a chapter's claims (a cell right after
a prediction would tell its answer); the tests do.

Ids are `chN.<words-with-dashes>` (`appendix` and other names for notebooks without a number).
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ID = r"[a-z0-9]+(?:\.[a-z0-9][a-z0-9-]*)+"
MARKER = re.compile(r"<!--\s*claim:\s*(" + ID + r")\s*-->")


def claim(claim_id: str):
    """Mark a test as the check of one chapter claim (see the module docstring)."""
    if not re.fullmatch(ID, claim_id):
        raise ValueError(f"claim id {claim_id!r} is not of the form chN.words-with-dashes")

    def mark(fn):
        fn.__claim__ = claim_id
        return pytest.mark.claim(claim_id)(fn)
    return mark


def notebook_claims(labs: Path = ROOT / "labs") -> list[tuple[str, str, int]]:
    """(claim id, notebook name, cell index) for every marker in every chapter's markdown."""
    found = []
    for path in sorted(labs.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "markdown":
                found += [(m, path.name, i) for m in MARKER.findall("".join(cell["source"]))]
    return found


def claims_in_tests(tests: Path = ROOT / "tests") -> list[tuple[str, str]]:
    """(claim id, 'file::test') for every `@claim("...")` decorator in tests/, read without importing."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "claim"
                            and dec.args and isinstance(dec.args[0], ast.Constant)):
                        found.append((dec.args[0].value, f"{path.relative_to(tests)}::{node.name}"))
    return found
