"""A student's cells never assert or check a chapter's claims: the claims are checked by tests tied to the
sentences (tests/claims.py). An assert in a notebook cell would print a prediction's answer as an
AssertionError, or stop a student's Run All on a number that a slower or different machine moves."""
import ast
import json
from pathlib import Path

import pytest

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("*.ipynb"))


@pytest.mark.parametrize("nb", LABS, ids=[p.name for p in LABS])
def test_no_cell_asserts(nb):
    for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        lines = [l for l in src.splitlines() if not l.lstrip().startswith(("%", "!"))]
        tree = ast.parse("\n".join(lines))
        found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)]
        assert not found, f"{nb.name} cell {i} asserts (line {found[0]}): move the check into a claim test"
