"""Install a CPU-only torch into the running environment (``make install`` calls this first).

PyPI's Linux torch wheel depends on several GB of ``nvidia-*`` CUDA wheels; netlab runs on CPU.
So, run with the environment's own python:

* Linux: ``pip install --index-url https://download.pytorch.org/whl/cpu torch==X`` (PyTorch's
  CPU index, the one binder/requirements.txt uses); if that fails -- index unreachable, no wheel
  for this Python -- fail fast (short ``--timeout``, no retries) and fall back to the default
  index: ``pip install torch==X``.
* macOS and Windows: the default index; its wheels there are CPU-only already.
* Each of those with uv first (``install_deps.uv_install``: ``pip install uv``, then ``uv pip install``,
  which unpacks torch's 800 MB in about 10 s where pip takes 20): PyPI's CPU index alone (no retries, a
  10 s timeout), then the indexes and find-links pip is configured with; pip's lines above if uv cannot
  be had or installs nothing. ``NETLAB_PIP=1`` skips uv.
* A torch that is already installed and satisfies what netlab needs (pyproject's ``torch>=...``,
  or the exact ``--torch`` spec when one was asked for with ``--exact``) is kept, whatever its
  build: no download, nothing replaced.

Knobs (also ``make`` variables): ``TORCH`` (the requirement, default ``torch==2.13.0``),
``TORCH_INDEX`` (the CPU index; empty: default index only). ``--dry-run`` prints the pip command
lines it would run, one per line, and runs nothing (the tests use it on every platform).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shlex
import subprocess
import sys

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
DEFAULT_TORCH = "torch==2.13.0"
FAST_FAIL = ["--timeout", "10", "--retries", "0"]     # an unreachable index fails in seconds, not minutes
HERE = os.path.dirname(os.path.abspath(__file__))


def _specifier_set(spec: str):
    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:                               # a bare venv: pip's vendored copy
        from pip._vendor.packaging.specifiers import SpecifierSet
    return SpecifierSet(spec)


def project_requirement(pyproject: str = os.path.join(HERE, "..", "pyproject.toml")) -> str:
    """The version range netlab itself needs, e.g. '>=2.4', read from pyproject.toml."""
    try:
        text = open(pyproject).read()
    except OSError:
        return ""
    match = re.search(r'"torch\s*([<>=!~][^"]*)"', text)
    return match.group(1).strip() if match else ""


def installed_torch() -> str | None:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def torch_version_spec(torch: str) -> str:
    """'torch==2.13.0' -> '==2.13.0'; a bad requirement is one clear error naming TORCH."""
    match = re.fullmatch(r"\s*torch\s*((?:[<>=!~]=?\s*[\w.*+!-]+\s*,?\s*)*)", torch)
    if not match:
        raise SystemExit(f"install_torch: TORCH must look like torch==2.13.0 or torch>=2.4, got {torch!r}")
    return match.group(1).replace(" ", "")


def plan(torch: str, platform: str, installed: str | None, index: str = CPU_INDEX,
         keep_if: str | None = None, python: str = sys.executable) -> list[list[str]]:
    """The pip command lines to try in order (stop at the first that succeeds); [] = nothing to do."""
    torch_version_spec(torch)                         # a bad TORCH fails here, before any download
    keep_if = project_requirement() if keep_if is None else keep_if
    if installed is not None and _specifier_set(keep_if).contains(installed, prereleases=True):
        return []
    pip = [python, "-m", "pip", "install", "--quiet"]
    default = pip + [torch]
    if platform.startswith("linux") and index:
        return [pip + FAST_FAIL + ["--index-url", index, torch], default]
    return [default]


def uv_sources(platform: str, index: str) -> list[str | None]:
    """What uv tries, in order: the CPU index alone (Linux), then pip's configured sources (None)."""
    return ([index] if platform.startswith("linux") and index else []) + [None]


def uv_line(torch: str, index: str | None) -> list[str]:
    return ["uv", "pip", "install", *(["--index-url", index] if index else []), torch]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default=os.environ.get("TORCH") or DEFAULT_TORCH,
                        help="requirement to install (default: $TORCH or %(default)s)")
    parser.add_argument("--index", default=os.environ.get("TORCH_INDEX", CPU_INDEX),
                        help="CPU wheel index tried first on Linux; empty: default index only")
    parser.add_argument("--exact", action="store_true",
                        help="keep an installed torch only if it satisfies --torch (not just netlab's range)")
    parser.add_argument("--platform", default=sys.platform, help="for --dry-run: linux, darwin or win32")
    parser.add_argument("--installed", default=None,
                        help="for --dry-run: pretend this torch version is installed ('none': none is)")
    parser.add_argument("--dry-run", action="store_true", help="print the pip command lines; run nothing")
    args = parser.parse_args(argv)
    installed = installed_torch() if args.installed is None else (None if args.installed == "none" else args.installed)
    keep_if = torch_version_spec(args.torch) if args.exact else None
    steps = plan(args.torch, args.platform, installed, args.index, keep_if)
    if not steps:
        print(f"install_torch: torch {installed} is already installed and compatible: kept")
        return 0
    use_uv = os.environ.get("NETLAB_PIP") != "1"
    if args.dry_run:
        for index in uv_sources(args.platform, args.index) if use_uv else []:
            print(shlex.join(uv_line(args.torch, index)))
        for step in steps:
            print(shlex.join(step))
        return 0
    if use_uv:
        sys.path.insert(0, HERE)
        import install_deps
        for index in uv_sources(args.platform, args.index):
            print("install_torch:", shlex.join(uv_line(args.torch, index)), flush=True)
            fast = {"UV_HTTP_TIMEOUT": "10", "UV_HTTP_RETRIES": "0"} if index else {}
            if install_deps.uv_install([args.torch], index=index, hold_torch=False, env_extra=fast):
                return 0
        print("install_torch: installing with pip instead", flush=True)
    for i, step in enumerate(steps):
        print("install_torch:", shlex.join(step), flush=True)
        if subprocess.run(step).returncode == 0:
            return 0
        if i + 1 < len(steps):
            print("install_torch: that failed; falling back to the default index", flush=True)
    print("install_torch: could not install torch", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
