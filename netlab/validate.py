"""One set of checks for every setting netlab takes, so a widget, the CLI and the Python API all
refuse bad input the same way: one ``ValueError`` whose message starts with the parameter's name.

    width = validate.whole(width, "width", 4, 8192)
    lr = validate.positive(lr, "lr")
    ratio = validate.fraction(ratio, "ratio")
    nbytes = validate.size("64M", "size")                 # units.parse_bytes, the same rules

Every check refuses what a float lets through by accident: nan, inf, overflowing values (1e400
becomes inf), booleans passed as numbers, and empty text. Limits that come from the machine
(memory, time) are refused with the estimate that exceeds them, before any rank starts
(``too_big``).
"""
from __future__ import annotations

import math
import numbers
import os

SEED_MAX = 2**32 - 1            # numpy's legacy generators refuse more; torch and random take it


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(value, name: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite real number from `low` to `high` (both included)."""
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{name}: must be a finite number{_range(low, high)}, got {value!r}")
    return float(value)


def whole(value, name: str, low: int | None = None, high: int | None = None, *, int_only: bool = False) -> int:
    """A whole number (an int, or a float with no fractional part) from `low` to `high`.

    `int_only`: refuse floats too (3.0 is not a layer count or a step count where a count is asked).
    """
    ok = _is_number(value) and math.isfinite(value) and float(value).is_integer()
    ok = ok and (isinstance(value, numbers.Integral) or not int_only)
    if ok:
        value = int(value)
        ok = (low is None or value >= low) and (high is None or value <= high)
    if not ok:
        raise ValueError(f"{name}: must be a whole number{_range(low, high)}, got {value!r}")
    return value


def positive(value, name: str, high: float = math.inf) -> float:
    """A finite number greater than zero (and at most `high`)."""
    if not _is_number(value) or not math.isfinite(value) or not 0 < value <= high:
        limit = f" and at most {high:g}" if math.isfinite(high) else ""
        raise ValueError(f"{name}: must be a finite number greater than zero{limit}, got {value!r}")
    return float(value)


def fraction(value, name: str, zero: bool = False) -> float:
    """A fraction: 0 < x <= 1 (0 <= x <= 1 when `zero`)."""
    if not _is_number(value) or not math.isfinite(value) or not (0 <= value if zero else 0 < value) or value > 1:
        raise ValueError(f"{name}: must be a fraction {'from 0' if zero else 'greater than 0'} to 1, got {value!r}")
    return float(value)


def seed(value, name: str = "seed") -> int:
    """A random seed: a whole number from 0 to 2**32 - 1."""
    return whole(value, name, 0, SEED_MAX)


def choice(value, name: str, options) -> str:
    """One of `options` (strings)."""
    if value not in options:
        raise ValueError(f"{name}: must be one of {', '.join(map(str, options))}; got {value!r}")
    return value


def flag(value, name: str) -> bool:
    """True or False (a bool: 1, 0, "yes" and None are refused, so a typo does not pass as a setting)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}: must be True or False, got {value!r}")
    return value


def instance(value, name: str, cls, what: str):
    """An instance of `cls` (a class or a tuple of classes); `what` names it in the message,
    e.g. "a netlab.fabric.storm.Storm"."""
    if not isinstance(value, cls):
        raise ValueError(f"{name}: must be {what}, got {value!r}")
    return value


def size(text, name: str = "size", allow_zero: bool = False) -> int:
    """Bytes from '4MiB', '1K', '2MB' or a number (``units.parse_bytes``)."""
    from .units import parse_bytes
    return parse_bytes(text, name, allow_zero)


def bandwidth(text, name: str = "bandwidth") -> float:
    """Bytes per second from '10Gbit/s', '25GB/s' or a number (``units.parse_bandwidth``)."""
    from .units import parse_bandwidth
    return parse_bandwidth(text, name)


def duration(text, name: str = "latency", allow_zero: bool = True) -> float:
    """Seconds from '5us', '2ms' or a number (``units.parse_time``)."""
    from .units import parse_time
    return parse_time(text, name, allow_zero)


def writable_file(path, name: str) -> str:
    """A file path whose folder exists and can be written, checked before the work that fills it."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"{name}: must be a file path, got {path!r}")
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"{name}: {str(path)!r} is a folder, not a file")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{name}: cannot write in {folder!r}")
    return str(path)


def too_big(name: str, estimate: float, limit: float, what: str, *, unit: str = "") -> None:
    """Refuse a setting whose estimate (bytes, events, hosts) exceeds what the machine can do."""
    if estimate > limit:
        raise ValueError(f"{name}: too large: {what} ~{estimate:.3g}{unit}, more than the {limit:.3g}{unit} "
                         "this machine can take; choose a smaller value")


def config(cls, given, settings: dict, **defaults):
    """`given` (a `cls`, a frozen config) or one built from `settings` over `defaults`; both at once is refused.

    For functions that take a config or its fields as keywords: ``measure_step(StepConfig(...))`` or
    ``measure_step(ranks=4, ...)``; the config's ``__post_init__`` checks the values."""
    if given is None:
        return cls(**{**defaults, **settings})
    if settings:
        raise ValueError(f"config: give a {cls.__name__} or its settings ({', '.join(settings)}), not both")
    if not isinstance(given, cls):
        raise ValueError(f"config: must be a {cls.__name__}, got {type(given).__name__}")
    return given


def _g(x) -> str:
    """A bound as people write it: whole numbers in full (4294967295, not 4.29497e+09)."""
    return f"{int(x)}" if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _range(low, high) -> str:
    has_low = low is not None and low != -math.inf
    has_high = high is not None and high != math.inf
    if has_low and has_high:
        return f" from {_g(low)} to {_g(high)}"
    if has_low:
        return f" >= {_g(low)}"
    if has_high:
        return f" <= {_g(high)}"
    return ""
