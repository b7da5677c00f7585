"""Ctrl-C (and SIGTERM) on a command: one line, exit 128 + signal, no process or folder left behind.

The signal is sent at several moments after netlab installed its handler (seen from outside as the
SIGHUP bit in /proc/PID/status SigCgt): while torch is still being imported, while the ranks start,
and while they run. Before that moment the interpreter itself is starting up and Python's own
KeyboardInterrupt applies (a few tens of milliseconds on an idle machine).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from conftest import wait_gone

pytestmark = pytest.mark.slow             # a real process per signal, waited on


def handler_installed(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(caught & (1 << (signal.SIGHUP - 1)))


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.parametrize("command, sig, delay", [
    (["step", "--ranks", "2", "--width", "64"], signal.SIGINT, 0.0),     # during `import torch`
    (["step", "--ranks", "2", "--width", "64"], signal.SIGINT, 1.5),
    (["bench", "allreduce", "--ranks", "2", "--sizes", "1M", "--iters", "10000"], signal.SIGINT, 6.0),
    (["ps", "--workers", "2", "--servers", "1", "--steps", "100000"], signal.SIGTERM, 6.0),
])
def test_a_signal_gives_one_line_and_leaves_nothing(command, sig, delay):
    tmpdir = tempfile.mkdtemp(prefix="nl-", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env["TMPDIR"] = tmpdir
    try:
        proc = subprocess.Popen([sys.executable, "-m", "netlab", *command], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 60
        while not handler_installed(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        time.sleep(delay)
        started = descendants(proc.pid)               # the fork server and the ranks, once they exist
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        word = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}[sig]
        assert proc.returncode == 128 + sig, (proc.returncode, err)
        assert err.splitlines() == [f"netlab {command[0]}: {word}"], err
        assert wait_gone(started, 10) == []
        time.sleep(0.5)
        assert os.listdir(tmpdir) in ([], [f"netlab-{os.getuid()}"])
        user = os.path.join(tmpdir, f"netlab-{os.getuid()}")
        assert not os.path.exists(user) or os.listdir(user) == []
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
