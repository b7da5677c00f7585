"""Chapters are committed clean: no outputs or execution counts (students run them; nbval executes them)."""
import ast
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


def code_cells(path) -> list[ast.Module]:
    """Each code cell parsed (IPython magics aside): what runs, not what comments or strings say."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    return [ast.parse("\n".join(l for l in "".join(c["source"]).splitlines() if not l.lstrip().startswith(("%", "!"))))
            for c in cells]


def names_read(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def check_calls(tree) -> list[ast.Call]:
    """Calls of ``netlab.check.<name>(...)``."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "check"
            and isinstance(n.func.value.value, ast.Name) and n.func.value.value.id == "netlab"]


@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_every_chapter_shrinks_under_ci_and_ends_with_an_exercise_check(path):
    """The first cell sets ``CI = "CI" in os.environ`` and a later cell reads ``CI`` (so a size depends on
    it); a numbered chapter's last cell calls a checker that ``netlab.check`` has on a function the
    student wrote (in that cell or before). Read from the cells' syntax trees, not grepped."""
    import netlab.check
    cells = code_cells(path)
    first = cells[0]
    sets_ci = [n for n in ast.walk(first) if isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == ["CI"]]
    assert sets_ci and ast.unparse(sets_ci[0].value) == "'CI' in os.environ", f"{path.name}: the first cell sets CI"
    assert any("CI" in names_read(c) for c in cells[1:]), f"{path.name}: no cell after the first reads CI"
    if not path.name[:2].isdigit():                  # an appendix has no exercise
        return
    calls = check_calls(cells[-1])
    assert calls, f"{path.name}: the last cell calls no netlab.check.<exercise>(...)"
    defined = {n.name for c in cells for n in ast.walk(c) if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for c in cells for n in ast.walk(c) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    for call in calls:
        assert callable(getattr(netlab.check, call.func.attr, None)), f"{path.name}: netlab.check has no {call.func.attr}"
        assert call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in defined, \
            f"{path.name}: {ast.unparse(call)} does not check something the chapter defines"
