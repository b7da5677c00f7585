"""Configuration as objects (issue 28): no public function or method in netlab/ takes more than 4
parameters by position, and one that takes more than 8 in all takes a config object (``Incast``,
``Congestion``, ``FitConfig``, ``StepConfig``, ...) or is listed here, keyword-only, with why.

The rule, read from the source with ``ast`` (nothing is imported), so a new function that breaks it fails
here by name:

* at most 4 positional parameters besides ``self``/``cls``: a 5th and later are keyword-only (after ``*``);
* at most 8 parameters in all (positional and keyword-only). A function that needs more takes a frozen,
  keyword-only config object and its few run-time options beside it, or is one of ``KEYWORD_ONLY``: every
  parameter past the 4th keyword-only, simple options rather than a chapter's knobs, each with its reason.
  ``*args`` and ``**kwargs`` are not counted (they forward);
* no call anywhere in netlab/ passes more than 4 arguments by position (a chain like
  ``_run(comm, "allreduce", algo, flat, count, dtype)`` names them: ``algo=algo, flat=..., ...``), except the
  calls in ``FORWARDS_STUDENT``, which call the student's exercise function with the arguments the chapter
  specifies for it. ``f(*args)`` forwards and is not counted.

Public: a module-level function, or a method of a class, whose name has no leading underscore, and a
public class's ``__init__`` (the class's name is what callers call). Functions nested inside a function
are local and not checked.

Exempt: ``netlab/exercises/``. Each stub's signature is the function the chapter specifies for the
student to write, and the checkers (``netlab/check``) and the solutions in ``tests/solutions`` call it
with exactly those arguments; changing it would change the exercise, not tidy an interface.
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "netlab"
EXEMPT = ("exercises",)           # the student's specified functions (see the docstring)
MAX_POSITIONAL = 4
MAX_PARAMETERS = 8

# More than 8 parameters, every one past the 4th keyword-only: simple options rather than a chapter's knobs.
KEYWORD_ONLY = {
    "compress/powersgd.py:PowerSGD.__init__": "torch's PowerSGDState takes the same keywords; compress.make builds it",
    "figures/timeline.py:timeline": ("a figure's drawing options (rows, span, unit, labels, legend), each "
                                     "keyword-only with a default, the way matplotlib's own plot functions "
                                     "take them; every chapter's timeline passes two or three"),
}


# Calls that pass more than 4 arguments by position on purpose: each calls the student's exercise function
# (or the wrapper that times and guards it) with exactly the positional arguments its stub specifies.
FORWARDS_STUDENT = {
    "check/ch6.py": ("call_student",),      # dctcp_update(alpha, cwnd, acked, marked, g)
    "check/ch7.py": ("_number",),           # predict_overlapped_step(nbytes, ready, compute, optimizer, ...)
}


def _is_static(node) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _functions(tree):
    """(function node, its class's name or None) for every function at module level or in a class,
    inside if/try/with blocks too; functions nested in functions are local and not yielded."""
    def visit(body, cls):
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield from visit(node.body, node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node, cls
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    yield from visit(getattr(node, field, []), cls)
                for handler in getattr(node, "handlers", []):
                    yield from visit(handler.body, cls)
    yield from visit(tree.body, None)


def _public(node, cls) -> bool:
    if cls is not None:
        return not cls.startswith("_") and (not node.name.startswith("_") or node.name == "__init__")
    return not node.name.startswith("_")


def counts(node, in_class=False) -> tuple[int, int]:
    """(positional parameters besides self/cls, parameters in all) of one function."""
    a = node.args
    pos = a.posonlyargs + a.args
    if in_class and not _is_static(node) and pos:
        pos = pos[1:]                                   # self or cls
    return len(pos), len(pos) + len(a.kwonlyargs)


def problems(node, positional=MAX_POSITIONAL, total=MAX_PARAMETERS, in_class=False, listed=False) -> list[str]:
    """What is wrong with one function's signature (empty: nothing); `listed`: a KEYWORD_ONLY exception."""
    npos, ntotal = counts(node, in_class)
    out = []
    if npos > positional:
        out.append(f"{npos} positional (at most {positional}: put * after the {positional}th)")
    if ntotal > total and not listed:
        out.append(f"{ntotal} parameters (at most {total}: group them in a config object)")
    return out


def signatures(text: str, name: str = "<source>"):
    """(key 'file:Class.function', line, positional, total, node) for every public function of `text`."""
    for node, cls in _functions(ast.parse(text)):
        if _public(node, cls):
            npos, ntotal = counts(node, cls is not None)
            label = f"{cls}.{node.name}" if cls else node.name
            yield f"{name}:{label}", node.lineno, npos, ntotal, node


def check_source(text: str, name: str = "<source>", listed=()) -> list[str]:
    """'file:line name: problems' for every public function or method of `text` that breaks the rule."""
    found = []
    for key, line, _, _, node in signatures(text, name):
        label = key.rsplit(":", 1)[1]
        bad = problems(node, in_class="." in label, listed=key in listed)
        if bad:
            found.append(f"{name}:{line} {label}: {'; '.join(bad)}")
    return found


def long_calls(text: str, name: str = "<source>", allowed=()) -> list[str]:
    """'file:line callee: n positional' for every call in `text` with more than 4 positional arguments."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        callee = ast.unparse(node.func)
        if len(node.args) > MAX_POSITIONAL and callee.rsplit(".", 1)[-1] not in allowed:
            found.append(f"{name}:{node.lineno} {callee}: {len(node.args)} positional arguments")
    return found


def _sources():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] not in EXEMPT:
            yield rel.as_posix(), path.read_text()


def offenders() -> list[str]:
    out = []
    for rel, text in _sources():
        out += [f"netlab/{line}" for line in check_source(text, rel, KEYWORD_ONLY)]
    return out


ALL = [(key, npos, total) for rel, text in _sources() for key, _, npos, total, _ in signatures(text, rel)]


def test_the_checker_sees_each_way_to_break_the_rule():
    src = '''
def five(a, b, c, d, e): pass
def four_then_keywords(a, b, c, d, *, e, f, g, h): pass
def nine_keywords(*, a, b, c, d, e, f, g, h, i): pass
def listed(a, *, b, c, d, e, f, g, h, i): pass
def _private(a, b, c, d, e, f, g, h, i): pass
def forwards(a, b, *args, **kwargs): pass
class Thing:
    def __init__(self, a, b, c, d, e): pass
    def method(self, a, b, c, d): pass
    @staticmethod
    def static(a, b, c, d, e): pass
    def _helper(self, a, b, c, d, e): pass
class _Private:
    def method(self, a, b, c, d, e): pass
if True:
    def guarded(a, b, c, d, e): pass
def outer():
    def inner(a, b, c, d, e): pass
'''
    names = [line.split()[1].rstrip(":") for line in check_source(src, listed={"<source>:listed"})]
    assert names == ["five", "nine_keywords", "Thing.__init__", "Thing.static", "guarded"]


def test_the_call_checker_counts_positional_arguments_only():
    src = '''
five(1, 2, 3, 4, 5)
four(1, 2, 3, 4, e=5, f=6)
obj.method(1, 2, 3, 4, 5)
forwards(*args)
forwards_more(1, 2, 3, 4, *rest)
outer(inner(1, 2, 3, 4, 5, 6))
student(1, 2, 3, 4, 5)
'''
    found = long_calls(src, allowed=("student",))
    assert [line.split()[1].rstrip(":") for line in found] == ["five", "obj.method", "inner"]
    assert "6 positional" in found[2]


def test_no_call_passes_more_than_four_arguments_by_position():
    bad = []
    for rel, text in _sources():
        bad += [f"netlab/{line}" for line in long_calls(text, rel, FORWARDS_STUDENT.get(rel, ()))]
    assert not bad, f"{len(bad)} calls pass more than 4 positional arguments (name them):\n" + "\n".join(bad)


def test_every_forwarding_call_is_still_one():
    for rel, callees in FORWARDS_STUDENT.items():
        text = (ROOT / rel).read_text()
        for callee in callees:
            assert long_calls(text, rel) and any(f" {callee}:" in line for line in long_calls(text, rel)), \
                f"{rel}: {callee} no longer passes more than 4 positional arguments; drop it from FORWARDS_STUDENT"


def test_the_tree_has_functions_to_check():
    assert len(ALL) > 500 and any(name == "dataparallel/train.py:fit" for name, _, _ in ALL)


def test_no_public_function_takes_more_than_four_positional_or_eight_parameters():
    bad = offenders()
    assert not bad, f"{len(bad)} public functions break the signature rule:\n" + "\n".join(bad)


def test_every_exception_is_still_one():
    totals = {name: total for name, _, total in ALL}
    stale = [name for name in KEYWORD_ONLY if totals.get(name, 0) <= MAX_PARAMETERS]
    assert not stale, f"listed but no longer over 8 parameters (or gone): {', '.join(stale)}"
