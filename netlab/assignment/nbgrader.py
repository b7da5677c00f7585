"""Export the exercises as an nbgrader course: one source notebook per chapter's exercise.

Why nbgrader and not Otter-Grader: nbgrader is Jupyter's own grading tool, runs on the course's
JupyterHub or a laptop with nothing but pip (Otter's local grading wants Docker, its usual
back end is Gradescope), and its format is plain cell metadata that survives any editor. Its
``### BEGIN SOLUTION`` / ``### BEGIN HIDDEN TESTS`` markers are the ones netlab's stubs already
imitate.

``export(COURSE)`` writes ``COURSE/source/<name>/exercise_chN.ipynb`` with the reference answer
(from tests/solutions/, so COURSE/source is instructors' material) inside solution markers, an
autograder cell worth the exercise's points that runs ``netlab.check`` on the chapter's public
cases and, between hidden-test markers, on the variant drawn from ``seed``. ``nbgrader
generate_assignment <name>`` then makes the student version (answers and hidden tests removed).
"""
from __future__ import annotations

import ast
import json
import os

from . import EXERCISES
from .build import SOLUTIONS, STUBS

CONFIG = '''c = get_config()  # noqa: F821
c.CourseDirectory.root = "."
c.CourseDirectory.course_id = "netlab"
'''


def _with_markers(reference: str, function: str) -> str:
    """The reference file with the body of `function` between nbgrader's solution markers."""
    lines = reference.splitlines()
    tree = ast.parse(reference)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    start, end = node.body[0].lineno - 1, node.end_lineno          # 0-based first body line, exclusive end
    indent = " " * node.body[0].col_offset
    body = lines[:start] + [indent + "### BEGIN SOLUTION"] + lines[start:end] + [indent + "### END SOLUTION"]
    text = "\n".join(body + lines[end:])
    return text.split('"""', 2)[2].lstrip("\n") if text.startswith('"""') else text    # drop the file's docstring


def _cell(kind: str, source: str, **nbgrader) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    if nbgrader:
        cell["metadata"]["nbgrader"] = {"schema_version": 3, "solution": False, "grade": False, "locked": False,
                                        **nbgrader}
    return cell


def notebook(exercise, seed: int, solutions: str = SOLUTIONS, stubs: str = STUBS) -> dict:
    stub = open(os.path.join(stubs, exercise.module), encoding="utf-8").read()
    prompt = ast.get_docstring(ast.parse(stub)) or exercise.teaches
    reference = open(os.path.join(solutions, exercise.module), encoding="utf-8").read()
    c, fn = exercise.chapter, exercise.function
    tests = (f"import netlab.check\n"
             f"netlab.check.{exercise.check}({fn}).assert_passed()\n"
             f"### BEGIN HIDDEN TESTS\n"
             f"from netlab.assignment.variants import run_check\n"
             f"run_check({c!r}, {fn}, seed={seed}).assert_passed()\n"
             f"### END HIDDEN TESTS")
    cells = [
        _cell("markdown", f"# {prompt.splitlines()[0]}\n\n" + "\n".join(prompt.splitlines()[1:]),
              grade_id=f"{c}_prompt", locked=True),
        _cell("code", _with_markers(reference, fn), grade_id=f"{c}_answer", solution=True),
        _cell("code", tests, grade_id=f"{c}_check", grade=True, locked=True, points=exercise.points),
    ]
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def export(course: str, name: str = "netlab", seed: int = 0, solutions: str = SOLUTIONS) -> str:
    """Write COURSE/nbgrader_config.py and COURSE/source/<name>/exercise_chN.ipynb; return the folder."""
    if not os.path.isdir(solutions):
        raise ValueError(f"the reference answers ({solutions}) are needed for nbgrader's source notebooks")
    folder = os.path.join(course, "source", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(course, "nbgrader_config.py"), "w") as f:
        f.write(CONFIG)
    for e in EXERCISES:
        with open(os.path.join(folder, f"exercise_{e.chapter}.ipynb"), "w", encoding="utf-8") as f:
            json.dump(notebook(e, seed, solutions), f, indent=1, ensure_ascii=False)
            f.write("\n")
    return folder
