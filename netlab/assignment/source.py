"""Find a student's answer to an exercise in a submission folder, and turn it into Python source.

A submission is a folder per student holding any of: the chapter's notebook (its exercise cell
defines the function) or the exercise's .py file (from the handed-out ``exercises/`` folder). Only
imports, function and class definitions and assignments are kept from a notebook's cells: the
``netlab.check(...)`` call, prints and experiments at top level are dropped. An answer that is
still the stub (its body ends in ``raise NotImplementedError``) loses to one that is not.
"""
from __future__ import annotations

import ast
import json
import os

from . import Exercise

KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
        ast.AnnAssign)


def _definitions(code: str, function: str) -> str | None:
    """The top-level definitions of `code` if it defines `function`, else None (or if it does not parse)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function for n in tree.body):
        return None
    tree.body = [n for n in tree.body if isinstance(n, KEEP)]
    return ast.unparse(tree)


def is_stub(code: str, function: str) -> bool:
    """True if `function` in `code` still ends by raising NotImplementedError (the handed-out stub)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            last = node.body[-1]
            return (isinstance(last, ast.Raise) and last.exc is not None and
                    "NotImplementedError" in ast.unparse(last.exc))
    return True


def notebook_answer(path: str, function: str) -> str | None:
    """Definitions from the last code cell of the notebook that defines `function`."""
    try:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f).get("cells", [])
    except (OSError, ValueError):
        return None
    found = None
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]   # magics
        code = _definitions("\n".join(lines), function)
        if code is not None:
            found = code
    return found


def find_answer(folder: str, exercise: Exercise) -> tuple[str | None, str | None]:
    """(source code, where it came from) for the student's answer; (None, None) if there is none."""
    candidates = []
    for base, _, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(base, name)
            if name == exercise.module:
                try:
                    code = _definitions(open(path, encoding="utf-8").read(), exercise.function)
                except (OSError, UnicodeDecodeError):
                    code = None
            elif name == exercise.notebook:
                code = notebook_answer(path, exercise.function)
            else:
                continue
            if code is not None:
                candidates.append((code, os.path.relpath(path, folder)))
    if not candidates:
        return None, None
    done = [c for c in candidates if not is_stub(c[0], exercise.function)]
    return (done or candidates)[0]
