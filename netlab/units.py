"""Human units for sizes, bandwidths and times, parsed strictly and printed plainly.

Conventions (the ones nccl-tests uses, stated in every table netlab prints):
  * bytes:      KB/MB/GB = 1e3/1e6/1e9 bytes; KiB/MiB/GiB = 2**10/2**20/2**30 bytes.
                A bare suffix K/M/G (no "B") is binary, as in nccl-tests' `-b 1K -e 256M`.
  * bandwidth:  Gbit/s (also Gb/s, Gbps) = 1e9 bit/s; GB/s = 1e9 bytes/s. Returned in bytes/s.
  * time:       s, ms, us (or µs), ns. Returned in seconds.

Every parser raises ``ValueError`` with the parameter's name, so a widget, the CLI and the
Python API all give the same one-line error for bad input.
"""
from __future__ import annotations

import math
import re

_NUM = r"\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*"

_BYTE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,  # bare suffix: binary (nccl-tests)
    "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9}  # divisors: 5/1e6 prints as 5e-06
_BIT_PREFIX = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def _split(text: str, name: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise ValueError(f"{name}: expected a number with a unit, got {text!r}")
    if isinstance(text, (int, float)):
        return float(text), ""
    m = re.fullmatch(_NUM + r"([A-Za-zµ/]*)\s*", str(text))
    if not m:
        raise ValueError(f"{name}: cannot read {text!r} (expected a number and a unit, e.g. '10Gbit/s', '5us', '4MiB')")
    return float(m.group(1)), m.group(2)


MAX_BYTES = 2**50               # 1 PiB: sizes beyond are typos (and lose whole bytes in a float)
MAX_BANDWIDTH = 1e15            # bytes/s (8 Pbit/s): beyond any link
MAX_LATENCY = 10.0              # seconds: beyond any network, a satellite hop is 0.6 s


def _positive(value: float, name: str, text, allow_zero: bool, high: float = math.inf, unit: str = "") -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number, got {text!r}")
    if value < 0 or (value == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "greater than zero"
        raise ValueError(f"{name}: must be {need}, got {text!r}")
    if value > high:
        raise ValueError(f"{name}: must be at most {high:g}{unit}, got {text!r}")
    return value


def parse_bytes(text, name: str = "size", allow_zero: bool = False, high: float = MAX_BYTES) -> int:
    """'4MiB' -> 4194304, '1K' -> 1024, '2MB' -> 2000000; a plain number is bytes."""
    value, unit = _split(text, name)
    factor = _BYTE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"{name}: unknown size unit {unit!r} in {text!r} (use B, KB, MB, GB, KiB, MiB, GiB, or K/M/G)")
    nbytes = value * factor
    _positive(nbytes, name, text=text, allow_zero=allow_zero, high=high, unit=" bytes")
    if abs(nbytes - round(nbytes)) > 1e-6 * max(1.0, nbytes):
        raise ValueError(f"{name}: {text!r} is not a whole number of bytes")
    return int(round(nbytes))


def parse_bandwidth(text, name: str = "bandwidth") -> float:
    """'10Gbit/s' -> 1.25e9 bytes/s; '25GB/s' -> 2.5e10 bytes/s. A plain number is bytes/s."""
    value, unit = _split(text, name)
    m = re.fullmatch(r"([kKmMgGtT]?)(bit|b|B)(/s|ps)", unit)
    if unit == "":
        bps = value                                         # already bytes per second
    elif m is None:
        raise ValueError(f"{name}: unknown bandwidth unit {unit!r} in {text!r} (use e.g. '10Gbit/s', '100Gb/s', '25GB/s')")
    elif m.group(2) == "B":
        bps = value * _BIT_PREFIX[m.group(1).lower()]       # GB/s: bytes per second, GB = 1e9
    else:
        bps = value * _BIT_PREFIX[m.group(1).lower()] / 8   # Gbit/s: 1e9 bit/s -> bytes per second
    return _positive(bps, name, text=text, allow_zero=False, high=MAX_BANDWIDTH, unit=" bytes/s")


def parse_time(text, name: str = "latency", allow_zero: bool = True, high: float = MAX_LATENCY) -> float:
    """'5us' -> 5e-6 s; '2ms' -> 0.002 s. A plain number is seconds."""
    value, unit = _split(text, name)
    divisor = 1.0 if unit == "" else _TIME_UNITS.get(unit.lower() if unit != "µs" else unit)
    if divisor is None:
        raise ValueError(f"{name}: unknown time unit {unit!r} in {text!r} (use s, ms, us or ns)")
    return _positive(value / divisor, name, text=text, allow_zero=allow_zero, high=high, unit=" s")


def parse_size_range(text: str, name: str = "sizes") -> list[int]:
    """'1K:256M' -> [1K, 2K, 4K, ..., 256M] (doubling, like nccl-tests -b/-e -f 2); 'a,b,c' -> list."""
    if ":" in str(text):
        parts = str(text).split(":")
        if len(parts) not in (2, 3):
            raise ValueError(f"{name}: expected MIN:MAX or MIN:MAX:FACTOR, got {text!r}")
        lo, hi = parse_bytes(parts[0], name), parse_bytes(parts[1], name)
        try:
            factor = float(parts[2]) if len(parts) == 3 else 2.0
        except ValueError:
            raise ValueError(f"{name}: FACTOR must be a number, got {parts[2]!r} in {text!r}") from None
        if hi < lo or not 1 < factor < math.inf:
            raise ValueError(f"{name}: need MIN <= MAX and FACTOR > 1, got {text!r}")
        out, s = [], float(lo)
        while s <= hi * (1 + 1e-9):
            out.append(int(round(s)))
            s *= factor
        return out
    sizes = [parse_bytes(p, name) for p in str(text).split(",") if p.strip()]
    if not sizes:
        raise ValueError(f"{name}: no size given in {text!r} (e.g. '1K:64M' or '1M,16M')")
    return sizes


def fmt_bytes(n: float) -> str:
    """Binary-prefixed size for tables: 1048576 -> '1.0 MiB'."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def fmt_time(s: float) -> str:
    """Seconds with a readable unit: 3.2e-6 -> '3.20 us'."""
    a = abs(s)
    if a >= 1:
        return f"{s:.3f} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e9:.1f} ns"


def fmt_bandwidth(bytes_per_s: float) -> str:
    """bytes/s -> 'x Gbit/s (y GB/s)', decimal prefixes."""
    return f"{bytes_per_s * 8 / 1e9:g} Gbit/s ({bytes_per_s / 1e9:g} GB/s)"
