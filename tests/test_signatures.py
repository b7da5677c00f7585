"""Configuration as objects (issue 28): no public function or method in netlab/ takes more than 8
parameters, and none takes more than 4 by position.

The rule, read from the source with ``ast`` (nothing is imported):

* at most 4 positional parameters besides ``self``/``cls``: a 5th and later are keyword-only (after ``*``);
* at most 8 parameters in all (positional and keyword-only). A function that needs more takes a frozen,
  keyword-only config object (``fabric.experiments.Incast``, ``fabric.congestion.Congestion``) and its
  few run-time options beside it. ``*args`` and ``**kwargs`` are not counted (they forward).

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


def _is_static(node) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def problems(node, positional=MAX_POSITIONAL, total=MAX_PARAMETERS, in_class=False) -> list[str]:
    """What is wrong with one function's signature (empty: nothing)."""
    a = node.args
    pos = a.posonlyargs + a.args
    if in_class and not _is_static(node) and pos:
        pos = pos[1:]                                   # self or cls
    out = []
    if len(pos) > positional:
        out.append(f"{len(pos)} positional (at most {positional}: put * after the {positional}th)")
    if len(pos) + len(a.kwonlyargs) > total:
        out.append(f"{len(pos) + len(a.kwonlyargs)} parameters (at most {total}: group them in a config object)")
    return out


def check_source(text: str, name: str = "<source>") -> list[str]:
    """'file:line name: problems' for every public function or method of `text` that breaks the rule."""
    found = []

    def visit(body, cls: str | None):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                public = not node.name.startswith("_")
                if cls is not None:
                    public = not cls.startswith("_") and (public or node.name == "__init__")
                bad = problems(node, in_class=cls is not None) if public else []
                if bad:
                    label = f"{cls}.{node.name}" if cls else node.name
                    found.append(f"{name}:{node.lineno} {label}: {'; '.join(bad)}")
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []), cls)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, cls)

    visit(ast.parse(text).body, None)
    return found


def offenders() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in EXEMPT:
            continue
        out += check_source(path.read_text(), f"netlab/{rel}")
    return out


def test_the_checker_sees_each_way_to_break_the_rule():
    src = '''
def five(a, b, c, d, e): pass
def four_then_keywords(a, b, c, d, *, e, f, g, h): pass
def nine_keywords(*, a, b, c, d, e, f, g, h, i): pass
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
def outer():
    def inner(a, b, c, d, e): pass
'''
    names = [line.split()[1].rstrip(":") for line in check_source(src)]
    assert names == ["five", "nine_keywords", "Thing.__init__", "Thing.static"]


def test_no_public_function_takes_more_than_four_positional_or_eight_parameters():
    bad = offenders()
    assert not bad, f"{len(bad)} public functions break the signature rule:\n" + "\n".join(bad)
