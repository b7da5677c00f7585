"""A rank that dies -- exits, is killed, segfaults, runs out of memory -- is named, with how it died.

Each case checks the error against what really happened to the process (its exit code or signal,
the cgroup's OOM-kill counter), that no rank is left, and that the next run works.
"""
import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import netlab
from conftest import joining, memory_cgroup, pool_pids, remove_cgroup, running, wait_gone

NET = netlab.network("10Gbit/s", "5us")


def die(comm, how):
    if comm.rank == 1:
        if how == "exit":
            os._exit(3)
        if how == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "segfault":
            ctypes.string_at(0)
    t = torch.zeros(4)
    comm.recv(t, 1)                                  # the others wait for rank 1


@pytest.mark.parametrize("how, exitcode, words", [
    ("exit", 3, "rank 1 died: it exited with code 3"),
    ("sigkill", -signal.SIGKILL, "rank 1 died: it was killed by SIGKILL"),
    ("segfault", -signal.SIGSEGV, "rank 1 died: it was killed by SIGSEGV (a crash in native code)"),
])
def test_a_rank_that_dies_is_named_with_how_it_died(how, exitcode, words):
    netlab.run(lambda c: c.rank, ranks=4)
    pids = pool_pids()
    # The other ranks would wait for rank 1 until the timeout, which raises RankTimeout, not RankDied:
    # the death is noticed for what it is, however loaded the machine (no clock is read).
    with pytest.raises(netlab.RankDied) as info:
        netlab.run(die, how, ranks=4, network=NET, timeout=60)
    assert isinstance(info.value, netlab.RankError)
    assert info.value.rank == 1 and info.value.exitcode == exitcode
    assert str(info.value).startswith(words), str(info.value)
    assert "out of memory" not in str(info.value)
    assert wait_gone(pids) == []
    assert netlab.run(lambda c: c.rank, ranks=4).values == [0, 1, 2, 3]


def test_a_rank_killed_while_idle_is_named_on_the_next_run():
    with netlab.Cluster(3) as c:
        os.kill(c.pids[2], signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(netlab.RankDied, match=r"^rank 2 died: it was killed by SIGKILL") as info:
            c.run(lambda comm: comm.rank)
        assert info.value.rank == 2
        assert wait_gone(c.pids if c.procs else []) == []
    netlab.run(lambda comm: comm.rank, ranks=3)      # the shared pool: a dead one is replaced quietly
    os.kill(pool_pids()[1], signal.SIGKILL)
    time.sleep(0.2)
    assert netlab.run(lambda comm: comm.rank, ranks=3).values == [0, 1, 2]




OOM_SCRIPT = textwrap.dedent("""
    import sys, netlab                                  # a kernel's driver: torch is only on its ranks

    def eat_memory(comm):
        import torch
        if comm.rank == 1:
            return torch.ones(1 << 29).sum().item()     # 2 GiB in a 1.5 GB cgroup: the OOM killer
        return 0

    netlab.run(lambda c: c.rank, ranks=2)
    try:
        netlab.run(eat_memory, ranks=2, timeout=120)
    except netlab.RankDied as exc:
        print(exc.rank, exc.exitcode, exc.oom, exc, sep="|", flush=True)
    print(netlab.run(lambda c: c.rank, ranks=2).values, flush=True)   # and the next run works
""")


@pytest.mark.slow                       # fills memory until a rank is killed
def test_an_oom_killed_rank_says_out_of_memory(tmp_path):
    """The Binder case: the lab's whole process tree lives in a memory-limited cgroup."""
    cgroup = memory_cgroup(1500 << 20)
    if cgroup is None:
        pytest.skip("needs root and a writable cgroup-v1 memory controller to make a cheap OOM kill")
    script = tmp_path / "oom.py"
    script.write_text(OOM_SCRIPT)

    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                             preexec_fn=joining(cgroup))
        assert out.returncode == 0, out.stderr[-2000:]
        died, after = out.stdout.strip().splitlines()
        rank, exitcode, oom, message = died.split("|")
        assert (rank, exitcode, oom) == ("1", str(-signal.SIGKILL), "True")
        assert message.startswith("rank 1 died: it was killed by SIGKILL: out of memory?")
        with open(os.path.join(cgroup, "memory.oom_control")) as f:
            assert "oom_kill 1" in f.read()             # the kernel's own count agrees: one OOM kill
        assert after == "[0, 1]"
    finally:
        remove_cgroup(cgroup)


def test_a_sigkill_by_someone_is_not_called_out_of_memory():
    netlab.run(lambda c: c.rank, ranks=2)
    with pytest.raises(netlab.RankDied) as info:
        netlab.run(die, "sigkill", ranks=2, network=NET)
    assert info.value.oom is not True and "out of memory?" not in str(info.value)
    readable = netlab.runtime.death.oom_kills(netlab.runtime.death.memory_cgroup(os.getpid())) is not None
    if not readable:                                 # then the message says it cannot tell
        assert "cannot be read" in str(info.value)
