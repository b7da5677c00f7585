"""Install netlab and its extras into the running environment (``make install`` calls this after
``install_torch.py``): ``python tools/install_deps.py -e ".[lab,dev]"``.

With uv when it can be had, else pip. Both resolve the same requirements from the same indexes; uv
resolves, downloads and unpacks in parallel and links files from its cache, so a fresh ``.venv``
takes about 10 s instead of a minute of pip (2 cores). How:

1. ``pip install uv`` into this environment (a few seconds; skipped when it is there already);
2. ``uv pip install`` with what pip is configured with here (``pip config list``: index-url,
   extra-index-url, find-links, constraint, cert), with pip's choice among indexes (the best
   version from any of them: ``--index-strategy unsafe-best-match``), and with the torch that
   ``install_torch.py`` installed held fixed (a constraint), so that the CPU build is never replaced,
   and byte-compiled as pip does (``--compile-bytecode``: uv leaves it out unless told, and where
   ``PYTHONDONTWRITEBYTECODE`` is set every process would compile what it imports, each time);
3. if either step fails (no uv for this platform, an index uv cannot read), ``pip install`` the same
   arguments, as before.

``NETLAB_PIP=1`` skips uv. ``--dry-run`` prints the command lines and runs nothing.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

# pip's settings (``pip config list``) that say where packages come from, as uv's options
PIP_TO_UV = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
             "constraint": "--constraint"}


def pip_settings(text: str) -> tuple[list[str], str | None]:
    """uv's options for pip's settings in `text` (``pip config list``'s output), and pip's cert if set.

    Entries look like ``global.extra-index-url='a b'`` or ``:env:.find-links='/x'``; one value may hold
    several, space-separated; the environment's own (``:env:``) win over files, as in pip."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        scope, _, name = key.rpartition(".")
        value = value.strip().strip("'\"")
        if name in PIP_TO_UV or name == "cert":
            if scope == ":env:" or name not in found:
                found[name] = value
    args: list[str] = []
    for name, flag in PIP_TO_UV.items():
        for value in found.get(name, "").split():
            args += [flag, value]
    return args, found.get("cert")


def uv_binary() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "uv")
    return here if os.path.exists(here) else None


def torch_pin() -> str | None:
    try:
        return f"torch=={importlib.metadata.version('torch')}"
    except importlib.metadata.PackageNotFoundError:
        return None


def uv_command(requirements: list[str], sources: list[str], constraint: list[str]) -> list[str]:
    uv = uv_binary() or shutil.which("uv") or "uv"
    return [uv, "pip", "install", "--quiet", "--python", sys.executable, "--compile-bytecode",
            "--index-strategy", "unsafe-best-match", *sources, *constraint, *requirements]


def uv_install(requirements: list[str], *, index: str | None = None, hold_torch: bool = True,
               env_extra: dict | None = None) -> bool:
    """``uv pip install`` `requirements` into this environment; True if uv installed them, False (and why, on
    stderr) if it could not be had or did not install. The sources are pip's configured ones, or, with
    `index`, that index alone (pip's constraint still applies). hold_torch: the installed torch is kept."""
    try:
        if uv_binary() is None:
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "uv"], check=True, timeout=300)
        config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                check=True).stdout
        sources, cert = pip_settings(config)
        if index is not None:                        # that index alone, under pip's constraints
            pairs = zip(sources[::2], sources[1::2])
            sources = ["--index-url", index] + [arg for flag, value in pairs if flag == "--constraint"
                                                for arg in (flag, value)]
        env = dict(os.environ, **(env_extra or {}))
        if cert and "SSL_CERT_FILE" not in env:
            env["SSL_CERT_FILE"] = cert
        with tempfile.TemporaryDirectory() as tmp:
            pin = torch_pin() if hold_torch else None
            constraint = []
            if pin:
                path = os.path.join(tmp, "torch.txt")
                with open(path, "w") as f:
                    f.write(pin + "\n")
                constraint = ["--constraint", path]
            run = subprocess.run(uv_command(requirements, sources, constraint), env=env, timeout=1800,
                                 stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            why = [line.strip() for line in run.stderr.splitlines() if line.strip()]
            raise subprocess.SubprocessError(why[-1] if why else f"exit status {run.returncode}")
        return True
    except (OSError, subprocess.SubprocessError, TypeError) as exc:
        print(f"install: uv did not install {' '.join(requirements)}"
              f"{' from ' + index if index else ''} ({exc})", file=sys.stderr)
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true")
    args, requirements = p.parse_known_args(argv)      # the rest are pip install's arguments: -e ".[lab,dev]"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *requirements]
    if args.dry_run:
        print(shlex.join([sys.executable, "-m", "pip", "install", "--quiet", "uv"]))
        print(shlex.join(["uv", "pip", "install", "--python", sys.executable, "...", *requirements]))
        print(shlex.join(pip))
        return 0
    if os.environ.get("NETLAB_PIP") != "1":
        if uv_install(requirements):
            return 0
        print("install_deps: installing with pip instead", file=sys.stderr)
    return subprocess.run(pip).returncode


if __name__ == "__main__":
    sys.exit(main())
