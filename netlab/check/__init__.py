"""Checks for the chapters' exercises: run the student's code against real ranks and a reference.

A chapter's checks live in ``check/chN.py`` and are reached as ``netlab.check.<name>``.
Each check returns a ``CheckResult`` that shows a pass/fail table in a notebook and raises with
``.assert_passed()`` in a test. A check never raises for a wrong or unfinished answer: it says what
is wrong, so a chapter always runs top to bottom. Its messages name the case, the phase or term that
is wrong and what was expected of it, never the formula or the code of the answer. An answer that
calls netlab's own implementation of what it is asked to write fails with a message saying so
(``Guard``: the calls are watched while the answer runs, so no import alias hides one).
"""
from __future__ import annotations

import os
import sys
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
    """(value, None) or (None, reason) -- an unfinished exercise is a result, not a crash.

    A ``Guard``-wrapped `fn` that called netlab's own implementation is a reason too (``own_implementation``).
    """
    try:
        return fn(*args), None
    except OwnImplementation as exc:
        return None, own_implementation(str(exc))
    except NotImplementedError as exc:
        return None, f"not implemented yet ({exc})" if str(exc) else "not implemented yet"
    except Exception as exc:  # noqa: BLE001 -- any bug in the answer is reported, not raised
        return None, f"raised {type(exc).__name__}: {exc}"


CHAPTERS = ("ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "ch9")


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


# ---- an answer must not call the package's own implementation of what it is asked to write ----------------

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STUDENT = os.path.join(_PACKAGE, "exercises") + os.sep          # the stubs: the student's own code
_HARMLESS = tuple(os.path.join(_PACKAGE, f) for f in ("lazy.py", "units.py", "validate.py"))
# torch's own collectives: an all-reduce "written" with one of them is not written from send and receive
TORCH_COLLECTIVES = frozenset({"all_reduce", "reduce_scatter", "reduce_scatter_tensor", "all_gather",
                               "all_gather_into_tensor", "all_gather_object", "all_to_all", "all_to_all_single",
                               "broadcast", "reduce", "all_reduce_coalesced", "all_gather_coalesced"})


class OwnImplementation(Exception):
    """The student's function called netlab's own code (or torch's collective) for what it was asked to write."""


def _internal(filename: str) -> bool:
    """Is this netlab's own code (not the student's stubs, not a harmless helper such as the unit parser)?"""
    return filename.startswith(_PACKAGE) and not filename.startswith(_STUDENT) and filename not in _HARMLESS


def _name(frame) -> str:
    module = frame.f_globals.get("__name__") or os.path.basename(frame.f_code.co_filename)
    return f"{module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"


class Guard:
    """``Guard(fn)(*args)`` calls a student's function and raises ``OwnImplementation`` if it (or anything it
    calls that is not netlab's) called into netlab's own code, e.g. ``netlab.sim.max_min_rates`` however it
    was imported (``from netlab.sim import max_min_rates as m`` included: the profiler sees the code that
    runs, not the name it was called by), or into torch's collectives when ``torch_collectives`` is set.

    `allow`: package paths (relative to netlab/, e.g. ``"runtime/"``) the answer may call, such as the
    ``comm`` it is handed; what they call in turn is theirs, not the answer's. A class with ``__call__``
    so that it pickles by reference (it runs on ranks too).
    """

    def __init__(self, fn, allow: tuple = (), torch_collectives: bool = False):
        self.fn, self.allow, self.torch_collectives = fn, tuple(allow), torch_collectives

    def _allowed(self, filename: str) -> bool:
        return any(filename.startswith(_PACKAGE + a) for a in self.allow)

    def __call__(self, *args, **kwargs):
        hits: list[str] = []
        top = sys._getframe()

        def from_the_answer(frame) -> bool:
            """No netlab frame between `frame` and the guard: the answer itself (or a builtin it used) called it."""
            f = frame.f_back
            while f is not None and f is not top:
                if f.f_code.co_filename.startswith(_PACKAGE) and not f.f_code.co_filename.startswith(_STUDENT):
                    return False
                f = f.f_back
            return f is top

        def profile(frame, event, arg):
            if event != "call" or len(hits) >= 16:
                return
            filename = frame.f_code.co_filename
            if _internal(filename) and not self._allowed(filename):
                if from_the_answer(frame):
                    hits.append(_name(frame))
            elif (self.torch_collectives and frame.f_code.co_name in TORCH_COLLECTIVES
                  and filename.endswith(os.path.join("torch", "distributed", "distributed_c10d.py"))
                  and from_the_answer(frame)):
                hits.append(f"torch.distributed.{frame.f_code.co_name}")

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            return self.fn(*args, **kwargs)
        finally:
            sys.setprofile(previous)
            if hits:                     # name a function, not the constructor of a helper it built first
                named = [h for h in hits if not h.rpartition(".")[2].startswith("__")]
                raise OwnImplementation((named or hits)[0])


def own_implementation(name: str) -> str:
    """What a check says when an answer called the package's implementation."""
    if name.startswith("torch."):
        return (f"your answer calls {name}, torch's own collective: the exercise is to write it yourself from "
                "comm's point-to-point calls")
    return (f"your answer calls {name}, netlab's own code for this (or code the check uses): the exercise is "
            "to write it yourself from the definition, and the check compares your function with that code")
