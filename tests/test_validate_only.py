"""Every check of user input goes through ``netlab/validate.py`` (issue 28).

A ``raise ValueError(...)`` whose message says what a validate check says ("must be greater than
zero", "must be one of", "True or False", ...) re-implements that check by hand, and its wording,
its refusal of nan/inf/bools and its return type drift from the others'. This scans netlab/ (not
the exercises, whose checks are the student's, nor validate.py itself) with ``ast`` and names each.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import netlab

ROOT = Path(netlab.__file__).resolve().parent

# A message with one of these re-implements a validate check: number, positive, whole, fraction,
# choice, flag or instance.
PHRASES = (
    "must be greater than zero",
    "must be zero or more",
    "must be one of",
    "choose one of",
    "true or false",
    "must be a whole number",
    "must be a finite number",
    "must be a netlab.",
    "must be in (0, 1]",
    "must be from 1 to",
)
PATTERNS = (
    re.compile(r"must be '[^']*'(, '[^']*')* or '"),     # "must be 'a' or 'b'": validate.choice
    re.compile(r"^[^ :]+: one of "),                      # "chapter: one of ...": validate.choice
    re.compile(r"^[^ :]+: (must be )?an? netlab[. ]"),    # "switch: a netlab.fabric.X": validate.instance
)

# file (relative to netlab/) and the start of the message: left by hand, each with its reason.
ALLOWED = {
    ("collectives/__init__.py", "algo: "):
        "the algorithms depend on the collective, and the message names it (tests match it)",
    ("net/topology.py", "nics: "): "cross-parameter: the NICs must divide the accelerators",
    ("linuxnet/linux.py", "shard: "): "a domain rule: whole float32 elements (a multiple of 4 bytes)",
    ("net/network.py", "congestion: "):
        "the fabric sits above net/ and imports it: the check looks the class up in sys.modules, not isinstance",
    ("dataparallel/sync.py", "sync: returns must be"):
        "an attribute of the user's Sync: the message names the parameter (sync) and the attribute (returns)",
    ("units.py", "{}: "): "units.py's parsers are validate.size, bandwidth and duration themselves",
}


def _text(node) -> str:
    """The literal text of a message: a string, an f-string's literal parts, or a concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def offending(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, message) of every ``raise ValueError(...)`` in `source` whose message re-implements a check."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
            continue
        call = node.exc
        if not (isinstance(call.func, ast.Name) and call.func.id == "ValueError") or not call.args:
            continue
        text = _text(call.args[0])
        low = text.lower()
        if any(p in low for p in PHRASES) or any(p.search(text) for p in PATTERNS):
            found.append((node.lineno, text))
    return found


def _files():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "validate.py" or rel.startswith("exercises/"):
            continue
        yield rel, path


def test_the_scanner_flags_a_hand_made_check_and_not_a_cross_parameter_rule():
    source = '''
def check(trim, pfc, rto_min, mode, switch):
    if not rto_min > 0:
        raise ValueError(f"rto_min: must be greater than zero, got {rto_min!r}")
    if trim and pfc is not None:
        raise ValueError("trim: trimming and PFC are two answers to a full buffer; choose one")
    if mode not in ("a", "b"):
        raise ValueError(f"mode: must be 'a' or 'b', got {mode!r}")
    if not isinstance(trim, bool):
        raise ValueError("trim: " + "True or False")
    if mode not in MODES:
        raise ValueError(f"mode: one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(switch, Congestion):
        raise ValueError(f"switch: a netlab.fabric.Congestion, got {switch!r}")
    if rto_min > pfc:
        raise ValueError(f"rto_min: must not exceed pfc ({pfc}), got {rto_min!r}")
    raise KeyError("must be one of")
'''
    found = offending(source)
    assert [line for line, _ in found] == [4, 8, 10, 12, 14]
    assert found[0][1] == "rto_min: must be greater than zero, got {}"


def test_the_scanner_reads_this_package():
    """It finds the raises of netlab (so an empty answer below means none, not a scanner that reads nothing)."""
    total = sum(len([n for n in ast.walk(ast.parse(p.read_text(), rel)) if isinstance(n, ast.Raise)])
                for rel, p in _files())
    assert total > 100


def test_no_module_re_implements_a_validate_check():
    left = []
    for rel, path in _files():
        for line, text in offending(path.read_text(), rel):
            if not any(rel == f and text.startswith(start) for f, start in ALLOWED):
                left.append(f"netlab/{rel}:{line}: {text}")
    assert not left, ("these re-implement a check of netlab/validate.py; call it instead:\n"
                      + "\n".join(left))


def test_every_allowed_message_is_still_there():
    """An allowance whose raise is gone (converted) must go too."""
    for f, start in ALLOWED:
        assert any(text.startswith(start) for _, text in offending((ROOT / f).read_text(), f)), (f, start)
