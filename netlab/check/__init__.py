"""Checks for the chapters' exercises: run the student's code against real ranks and a reference.

A chapter's checks live in ``check/chN.py`` and are reached as ``netlab.check.<name>``.
Each check returns a ``CheckResult`` that shows a pass/fail table in a notebook and raises with
``.assert_passed()`` in a test. A check never raises for a wrong or unfinished answer: it says what
is wrong, so a chapter always runs top to bottom.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CheckResult:
    exercise: str
    passed: bool
    message: str
    rows: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "NOT YET"
        lines = [f"[{mark}] {self.exercise}: {self.message}"]
        for row in self.rows:
            lines.append("   " + "  ".join(f"{k}={v}" for k, v in row.items()))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#b35900"
        head = f"<b style='color:{colour}'>{'✔ PASS' if self.passed else '✘ NOT YET'}</b> {self.exercise}: {self.message}"
        if not self.rows:
            return f"<div>{head}</div>"
        cols = list(self.rows[0])
        table = "".join("<tr>" + "".join(f"<td>{r.get(c, '')}</td>" for c in cols) + "</tr>" for r in self.rows)
        return (f"<div>{head}<table><tr>{''.join(f'<th>{c}</th>' for c in cols)}</tr>{table}</table></div>")

    def assert_passed(self) -> "CheckResult":
        if not self.passed:
            raise AssertionError(str(self))
        return self


def call_student(fn, *args):
    """(value, None) or (None, reason) -- an unfinished exercise is a result, not a crash."""
    try:
        return fn(*args), None
    except NotImplementedError as exc:
        return None, f"not implemented yet ({exc})" if str(exc) else "not implemented yet"
    except Exception as exc:  # noqa: BLE001 -- any bug in the answer is reported, not raised
        return None, f"raised {type(exc).__name__}: {exc}"


CHAPTERS = ("ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch9")


def __getattr__(name: str):
    """``netlab.check.<exercise>``: found in the chapter module (check/chN.py) that defines it."""
    import importlib
    for chapter in CHAPTERS:
        try:
            module = importlib.import_module(f"{__name__}.{chapter}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{chapter}":
                raise
            continue
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"netlab.check has no exercise check {name!r}")
