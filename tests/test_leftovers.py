"""Nothing outlives a run or its driver: processes the ranks start, temporary folders, caches.

Drivers here run with TMPDIR pointing at an empty folder, so "nothing left" is checked by listing it.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import netlab
from conftest import execute, pool_pids, running, wait_gone


pytestmark = pytest.mark.slow             # fresh interpreters and drivers, killed on purpose


def start_child_then_hang(comm, pid_file):
    if comm.rank == 1:
        child = subprocess.Popen(["sleep", "300"])
        with open(pid_file, "w") as f:
            f.write(str(child.pid))
    time.sleep(600)


def test_a_process_a_rank_started_dies_with_the_run(tmp_path):
    pid_file = tmp_path / "child.pid"
    netlab.run(lambda c: c.rank, ranks=2)
    ranks = pool_pids()
    with pytest.raises(netlab.RankTimeout):
        netlab.run(start_child_then_hang, str(pid_file), ranks=2, timeout=3)
    child = int(pid_file.read_text())
    assert wait_gone([child, *ranks], 2) == []


def ignore_sigterm(comm):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)


def test_ranks_that_ignore_sigterm_are_killed_together(monkeypatch):
    """One grace for all ranks at once (it was a grace per rank): every rank gets its SIGTERM before any
    gets its SIGKILL. The order of the signals is read, not a clock, so a loaded machine cannot fail it."""
    netlab.run(lambda c: c.rank, ranks=4)
    ranks = pool_pids()
    sent, killpg = [], os.killpg

    def record(pid, sig):
        if pid in ranks:
            sent.append(sig)
        killpg(pid, sig)
    monkeypatch.setattr(os, "killpg", record)
    with pytest.raises(netlab.RankTimeout):
        netlab.run(ignore_sigterm, ranks=4, timeout=2)
    assert sent == [signal.SIGTERM] * 4 + [signal.SIGKILL] * 4, sent
    assert wait_gone(ranks) == []


DRIVER = textwrap.dedent("""
    import subprocess, sys, time, netlab
    from netlab.runtime import rundir as _rundir

    def start_child(comm):
        return subprocess.Popen(["sleep", "300"]).pid if comm.rank == 1 else None

    res = netlab.run(start_child, ranks=2)
    print(*netlab.runtime.shared._default.pids, res.values[1], _rundir.driver_dir(), flush=True)
    time.sleep(600)
""")


@pytest.fixture
def tmpdir_short():
    """An empty TMPDIR with a short path (a unix socket's path must fit in 108 bytes)."""
    path = tempfile.mkdtemp(prefix="nl-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def clean_env(tmpdir):
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env["TMPDIR"] = str(tmpdir)
    return env


def leftovers(tmpdir):
    """Everything in TMPDIR except netlab's (empty) per-user folder."""
    found = sorted(os.listdir(tmpdir))
    user = f"netlab-{os.getuid()}"
    if user in found:
        found.remove(user)
        found += [f"{user}/{name}" for name in os.listdir(os.path.join(tmpdir, user))]
    return found


# SIGKILL (nothing of the driver runs) and SIGTERM (one it could catch). SIGHUP is not a third case: a
# script or kernel has no handler for either (netlab installs SIGTERM's and SIGHUP's together, for
# `python -m netlab` only, and test_cli_signals.py covers them there), so both end it the same way.
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_driver_leaves_no_process_and_its_folder_is_swept(tmp_path, tmpdir_short, sig):
    tmpdir = tmpdir_short
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = clean_env(tmpdir)
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    line = driver.stdout.readline().split()
    assert len(line) == 4, driver.stderr.read()
    rank0, rank1, child, folder = int(line[0]), int(line[1]), int(line[2]), line[3]
    assert os.path.isdir(folder) and leftovers(tmpdir) == [f"netlab-{os.getuid()}/{os.path.basename(folder)}"]
    assert running(child)
    driver.send_signal(sig)
    driver.wait(timeout=60)
    assert wait_gone([rank0, rank1, child], 10) == []
    # the next driver sweeps what the killed one could not remove (exit handlers did not run)
    subprocess.run([sys.executable, "-c", "import netlab"], env=env, check=True, timeout=120)
    assert not os.path.exists(folder)
    assert leftovers(tmpdir) == []                   # no pymp-*, no torchinductor_*, no rendezvous


def test_a_normal_exit_removes_everything(tmpdir_short):
    tmpdir = tmpdir_short
    code = "import netlab\nfrom netlab.dataparallel import buckets\nbuckets.backward_profile(8, 1, 1)\nnetlab.run(lambda c: c.rank, ranks=2)"
    subprocess.run([sys.executable, "-c", code], env=clean_env(tmpdir), check=True, timeout=240)
    assert leftovers(tmpdir) == []


def test_kernel_restart_leaves_nothing_behind(tmpdir_short):
    jupyter_client = pytest.importorskip("jupyter_client")

    tmpdir = tmpdir_short
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=os.path.dirname(__file__), env=clean_env(tmpdir))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        code = ("import netlab\nfrom netlab.runtime import rundir as _rundir\nnetlab.run(lambda c: c.rank, ranks=3)\n"
                "print(*netlab.runtime.shared._default.pids, _rundir.driver_dir())")
        status, out, _ = execute(kc, code)
        assert status == "ok", out
        *pids, folder = out.split()
        km.restart_kernel(now=True)                  # Kernel > Restart: the old kernel gets no exit handlers
        assert wait_gone([int(p) for p in pids], 10) == []
        kc.wait_for_ready(timeout=60)
        status, out, _ = execute(kc, "import netlab\nprint(netlab.run(lambda c: c.rank, ranks=2).values)")
        assert status == "ok" and out.strip() == "[0, 1]"
        assert not os.path.exists(folder)            # the new kernel swept the old one's folder
        assert [name for name in leftovers(tmpdir) if not name.startswith(f"netlab-{os.getuid()}/")] == []
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)         # a kill, too: the next driver sweeps this one's folder
    from netlab.runtime import rundir as _rundir
    deadline = time.monotonic() + 10
    while leftovers(tmpdir) and time.monotonic() < deadline:
        _rundir.sweep(os.path.join(tmpdir, f"netlab-{os.getuid()}"))
        time.sleep(0.2)
    assert leftovers(tmpdir) == []
