"""Chapters are committed clean: no outputs or execution counts (students run them; nbval executes them)."""
import json
from pathlib import Path

import pytest

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("*.ipynb"))


@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{path.name}: a cell has outputs"


def test_every_chapter_shrinks_under_ci_and_ends_with_an_exercise_check():
    for path in LABS:
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert '"CI" in os.environ' in code, f"{path.name} does not read the CI variable"
        if path.name[:2].isdigit():                  # a numbered chapter; an appendix has no exercise
            assert "netlab.check." in code, f"{path.name} has no exercise checked by the package"
