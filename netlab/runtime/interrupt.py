"""Ctrl-C, SIGTERM and SIGHUP on the command line: one line, exit 128 + signal, nothing left behind.

Installed by ``netlab/__init__.py`` before anything heavy is imported, and only when netlab runs as
a command (``python -m netlab ...`` or the ``netlab`` script): a Jupyter kernel keeps its own SIGINT
handling (Kernel > Interrupt raises KeyboardInterrupt, which the pool turns into ``Interrupted``).

Why not let KeyboardInterrupt propagate: it prints a 20-60-line traceback, and while torch is
being imported some of its import-time code swallows it (the run then finished 25 s later with
exit 0). The handler here never raises into the interrupted code: it stops the ranks (SIGTERM to
their process groups, SIGKILL 0.5 s later), deletes any Linux testbed's namespaces, removes the
driver's temporary folder, prints one line and leaves with ``os._exit``. A second signal during that cleanup leaves at once.
"""
from __future__ import annotations

import os
import signal
import sys

EXIT = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated"), signal.SIGHUP: (129, "hung up")}
_stopping = False


def running_as_command() -> bool:
    """True for ``python -m netlab ...`` and the ``netlab`` console script, False in a kernel or a script."""
    argv = getattr(sys, "orig_argv", sys.argv)
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] in ("netlab", "netlab.cli"):
        return True
    return os.path.basename(sys.argv[0] if sys.argv else "") == "netlab"


def _stop(signum, frame) -> None:  # noqa: ARG001 -- a signal handler's signature
    global _stopping
    code, words = EXIT.get(signum, (128 + signum, "stopped"))
    if _stopping:
        os._exit(code)
    _stopping = True
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 -- a closed or broken stdout: leaving anyway
        pass
    command = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else ""
    try:
        os.write(2, f"{_after_bar()}netlab{' ' + command if command else ''}: {words}\n".encode())
    except OSError:
        pass
    pool = sys.modules.get("netlab.runtime.pool")
    if pool is not None and hasattr(pool, "_close_all"):
        try:
            pool._close_all()
        except BaseException:  # noqa: BLE001
            pass
    netns = sys.modules.get("netlab.linuxnet.netns")
    if netns is not None:                 # `congestion incast --real`: delete the testbed's namespaces
        try:
            netns._close_all()
        except BaseException:  # noqa: BLE001
            pass
    _stop_forkserver()                    # it may still be importing torch, which makes a cache folder
    rundir = sys.modules.get("netlab.runtime.rundir")
    if rundir is not None:
        rundir.remove_now()
    os._exit(code)


def _after_bar() -> str:
    """A newline when a progress bar is on the terminal, so the line starts after the bar, not in it."""
    std = sys.modules.get("tqdm.std")
    try:
        return "\n" if std is not None and any(not b.disable for b in list(std.tqdm._instances)) else ""
    except Exception:  # noqa: BLE001 -- tqdm's internals changed: the line as it is
        return ""


def _stop_forkserver() -> None:
    """Kill multiprocessing's fork server and reap it, so nothing writes into the driver's folder after
    it is removed (a fork server still importing torch creates torch's compile-cache folder there)."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def install() -> None:
    """Handle SIGINT, SIGTERM and SIGHUP as above (from the main thread, before heavy imports)."""
    for sig in EXIT:
        signal.signal(sig, _stop)
