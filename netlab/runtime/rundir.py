"""One private temporary folder per driver process, so that nothing netlab writes outlives it.

    $TMPDIR/netlab-<uid>/<pid>-<start time>-XXXX/      this driver (a kernel, a CLI run, a script)
        rendezvous-XXXX/                                 one per rank pool: gloo's FileStore
        pymp-XXXX/                                       multiprocessing's fork-server listener
        torchinductor/                                   torch's compile cache, should anything compile

The folder is removed when the driver exits normally. A driver that cannot clean up (SIGKILL, a
kernel restart, which skips exit handlers) leaves its folder behind; the next driver of the same
user sweeps every folder whose owner (pid and start time, read from /proc) is gone. Folders are
0700 and the per-user parent is checked to be ours and not a link, so another local user can neither
read the rendezvous nor plant one.
"""
from __future__ import annotations

import atexit
import multiprocessing.process as mp_process
import os
import shutil
import stat
import tempfile

_mine: str | None = None


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot ('' where /proc is not there): pid + this is unique."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def alive(pid: int, started: str) -> bool:
    """Whether process `pid` still runs and is the one that started at `started` (its start time in
    /proc, "" for any): a pid the kernel reused for another process reads as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not started or _start_time(pid) in ("", started)


def user_root() -> str:
    """$TMPDIR/netlab-<uid>, created 0700; refused if it is a link or belongs to someone else."""
    root = os.path.join(tempfile.gettempdir(), f"netlab-{os.getuid()}")
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise RuntimeError(f"{root} is not a private folder of this user; remove it or set TMPDIR elsewhere")
    return root


def sweep(root: str) -> list[str]:
    """Remove the folders of drivers that are gone; return what was removed."""
    removed = []
    for name in os.listdir(root):
        parts = name.split("-")
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        if not alive(int(parts[0]), parts[1]):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


def driver_dir() -> str:
    """This process's folder (created, and the leftovers of dead drivers swept, on first use)."""
    global _mine
    if _mine is not None and os.getpid() == int(os.path.basename(_mine).split("-")[0]) and os.path.isdir(_mine):
        return _mine
    root = user_root()
    sweep(root)
    pid = os.getpid()
    _mine = tempfile.mkdtemp(prefix=f"{pid}-{_start_time(pid) or 0}-", dir=root)
    atexit.register(_remove, _mine, pid)
    return _mine


def _remove(path: str, owner: int) -> None:
    if os.getpid() == owner:                     # not in a forked child that runs exit handlers
        shutil.rmtree(path, ignore_errors=True)


def remove_now() -> None:
    """Remove this driver's folder at once (a CLI that is interrupted, before os._exit)."""
    if _mine is not None:
        _remove(_mine, int(os.path.basename(_mine).split("-")[0]))


def adopt_multiprocessing_tempdir() -> None:
    """Put multiprocessing's pymp-XXXX folder (the fork server's socket) inside this driver's folder.

    multiprocessing removes it from an exit handler, which SIGKILL and a kernel restart skip; inside
    our folder the next driver's sweep takes it. Does nothing if multiprocessing already made one,
    or if TMPDIR is so long that the socket's path would not fit.
    """
    config = mp_process.current_process()._config
    # the socket's path must fit in sun_path (108 bytes): .../pymp-XXXXXXXX/listener-XXXXXXXX
    if config.get("tempdir") is None and len(driver_dir()) + 32 < 104:
        config["tempdir"] = tempfile.mkdtemp(prefix="pymp-", dir=driver_dir())
