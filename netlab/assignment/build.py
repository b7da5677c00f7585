"""``assignment build OUT/``: the student version of every chapter, with no reference answer in it.

OUT/ gets the chapters' notebooks (outputs stripped), ``exercises/`` with the stubs from
netlab/exercises/, and a README that says what to hand in. The build refuses when an exercise is
not a stub any more (someone pasted an answer into a notebook or a stub file) and when any line of
a reference answer (tests/solutions/, instructors only) appears anywhere in OUT/.
"""
from __future__ import annotations

import ast
import json
import os
import shutil

from . import EXERCISES
from .source import is_stub, notebook_answer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABS = os.path.join(ROOT, "labs")
STUBS = os.path.join(ROOT, "netlab", "exercises")
SOLUTIONS = os.path.join(ROOT, "tests", "solutions")

README = """# netlab assignment

Work through each chapter's notebook. Each ends with an exercise: fill in the function in its code
cell (or in `exercises/`) and run the cell: `netlab.check` tells you what is right and what is not.

Hand in this folder (or at least the notebooks you worked in, and `exercises/` if you used it),
together with `predictions.json` if your chapters asked you for predictions. The grader runs your
functions on real ranks with cases drawn from the instructor's seed: answers that only match the
numbers printed in the notebook do not pass.

Exercises: {exercises}
"""


def _strip(nb: dict) -> dict:
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def solution_lines(solutions: str = SOLUTIONS) -> dict[str, set[str]]:
    """{file: lines of reference code} -- the substantive lines of each function body in tests/solutions/."""
    found = {}
    if not os.path.isdir(solutions):
        return found
    for name in sorted(os.listdir(solutions)):
        if not name.endswith(".py"):
            continue
        text = open(os.path.join(solutions, name), encoding="utf-8").read()
        lines = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                for stmt in node.body:
                    for line in ast.unparse(stmt).splitlines():
                        line = line.strip()
                        if len(line) >= 20 and not line.startswith(("raise NotImplementedError", "\"\"\"")):
                            lines.add(line)
        found[name] = lines
    return found


def leaks(out: str, solutions: str = SOLUTIONS) -> list[str]:
    """'file: line' for every reference-answer line found in any file under `out`."""
    reference = solution_lines(solutions)
    hits = []
    for base, _, files in os.walk(out):
        for name in files:
            path = os.path.join(base, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (OSError, UnicodeDecodeError):
                continue
            if path.endswith(".ipynb"):              # compare code, not JSON-escaped strings
                cells = json.loads(text).get("cells", [])
                text = "\n".join("".join(c.get("source", "")) for c in cells)
            normalised = {ln.strip() for ln in text.splitlines()}
            try:
                normalised |= {ln.strip() for ln in ast.unparse(ast.parse(text)).splitlines()}
            except SyntaxError:
                pass
            for source, lines in reference.items():
                for line in sorted(lines & normalised):
                    hits.append(f"{os.path.relpath(path, out)}: {line}  (from {source})")
    return hits


def build(out: str, labs: str = LABS, stubs: str = STUBS, solutions: str = SOLUTIONS) -> list[str]:
    """Write the student version into `out` (created; must be empty if it exists). Returns its files."""
    if os.path.exists(out) and os.listdir(out):
        raise ValueError(f"OUT: {out!r} exists and is not empty")
    problems = []
    for e in EXERCISES:
        nb_path, stub_path = os.path.join(labs, e.notebook), os.path.join(stubs, e.module)
        code = notebook_answer(nb_path, e.function)
        if code is None:
            problems.append(f"{e.notebook}: no exercise cell defines {e.function}()")
        elif not is_stub(code, e.function):
            problems.append(f"{e.notebook}: the exercise cell for {e.function}() is not a stub")
        if not is_stub(open(stub_path, encoding="utf-8").read(), e.function):
            problems.append(f"netlab/exercises/{e.module}: {e.function}() is not a stub")
    if problems:
        raise ValueError("the chapters cannot be handed out:\n  " + "\n  ".join(problems))
    os.makedirs(os.path.join(out, "exercises"), exist_ok=True)
    for e in EXERCISES:
        with open(os.path.join(labs, e.notebook), encoding="utf-8") as f:
            nb = _strip(json.load(f))
        with open(os.path.join(out, e.notebook), "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
        shutil.copyfile(os.path.join(stubs, e.module), os.path.join(out, "exercises", e.module))
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(README.format(exercises=", ".join(f"{e.chapter} {e.function}() ({e.points} points)"
                                                   for e in EXERCISES)))
    found = leaks(out, solutions)
    if found:
        shutil.rmtree(out)
        raise ValueError("a reference answer would be handed out; nothing written:\n  " + "\n  ".join(found[:10]))
    return sorted(os.path.relpath(os.path.join(b, n), out) for b, _, fs in os.walk(out) for n in fs)
