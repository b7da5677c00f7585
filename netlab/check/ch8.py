"""Exercise 8 (chapter 8): the capstone's design, handed in as a function like every other exercise.

The student writes ``capstone_design()``, which returns the five choices of the design (algorithm,
compression, bucket size, placement, overlap). This check calls it and passes the choices to
``netlab.check.capstone``, which judges them on the exercise's cluster; so the notebook, the grader
(``netlab grade``) and the nbgrader export all hand the check a function, and an unfinished design
(``NotImplementedError``) is a result, not a crash. What the design is judged by lives with the
capstone's check; here only the hand-in.
"""
from __future__ import annotations

from . import CheckResult, call_student

CHOICES = ("algo", "compression", "bucket", "placement", "overlap")
OPTIONAL = ("error_feedback",)          # False unless the design sets it, as in chapter 4
NAME = "Exercise 8 (capstone design)"


def capstone_design(fn=None) -> CheckResult:
    """Call fn() for the design's choices and judge them with the capstone's check."""
    import netlab.check as check
    if fn is None:
        from ..exercises.ch8_capstone import capstone_design as fn
    choices, problem = call_student(fn)
    if problem:
        return CheckResult(NAME, False, problem)
    if not isinstance(choices, dict):
        return CheckResult(NAME, False, f"expected a dict with the keys {', '.join(CHOICES)}, got "
                                        f"{type(choices).__name__}")
    missing = [k for k in CHOICES if k not in choices]
    unknown = [k for k in choices if k not in CHOICES + OPTIONAL]
    if missing or unknown:
        parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + \
                ([f"unknown {', '.join(map(repr, unknown))}"] if unknown else [])
        return CheckResult(NAME, False, f"the design needs exactly the keys {', '.join(CHOICES)}: "
                                        + "; ".join(parts))
    result = check.capstone(**choices)
    return CheckResult(NAME, result.passed, result.message, result.rows)
