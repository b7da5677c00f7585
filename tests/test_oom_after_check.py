"""The memory check keeps its promise: when it let a run start and another process in the same cgroup
grew afterwards until the OOM killer ended a rank or the fork server, the run's RankDied names the
victim, says "out of memory?" and "memory grew after the check".

Real OOM kills in a small cgroup-v1 memory cgroup (root only): a grower process, started after the
check, takes memory until the cgroup's OOM-kill count goes up, then exits. The victim is chosen by
raising its oom_score_adj to 1000 (the grower's is -1000), so the kernel's own choice is the test's.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import joining, memory_cgroup, remove_cgroup


pytestmark = pytest.mark.slow             # fills a cgroup until the OOM killer acts

SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, time
    import netlab
    from netlab.runtime import memory, shared
    from netlab.runtime import death

    victim, cgroup, ready = sys.argv[1], sys.argv[2], sys.argv[3]
    GROW = '''
    import os, sys, time
    open("/proc/self/oom_score_adj", "w").write("-1000")     # never the one the OOM killer picks
    counter = sys.argv[1] + "/memory.oom_control"
    kills = lambda: int(open(counter).read().split("oom_kill ")[1].split()[0])
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.02)
    start, held = kills(), []
    while kills() == start:
        held.append(b"x" * (16 << 20))                         # touched pages: charged at once
        time.sleep(0.01)
    '''

    def wait_to_be_chosen(comm, victim, ready):
        if comm.rank == 1 and victim == "rank":
            open("/proc/self/oom_score_adj", "w").write("1000")
            comm.ballast = b"x" * (200 << 20)                # so that its death frees enough at once
        if comm.rank == 1:
            open(ready, "w").close()
        time.sleep(90)
        return comm.rank

    netlab.run(lambda c: c.rank, ranks=2)
    if victim == "fork server":
        open(f"/proc/{death.forkserver_pid()}/oom_score_adj", "w").write("1000")
    shared.check_memory(2, memory.rank_bytes(1e6, 2), "this test run")
    grower = subprocess.Popen([sys.executable, "-c", GROW, cgroup, ready])
    try:
        netlab.run(wait_to_be_chosen, victim, ready, ranks=2, timeout=120)
    except netlab.RankDied as exc:
        print(exc.process, exc.rank, exc.exitcode, exc.oom, exc, sep="|", flush=True)
    grower.wait(timeout=60)
    print(netlab.run(lambda c: c.rank, ranks=2).values, flush=True)       # and the next run works
""")


def _procs(cgroup):
    with open(os.path.join(cgroup, "cgroup.procs")) as f:
        return f.read().split()


@pytest.mark.parametrize("victim", ["rank", "fork server"])
def test_an_oom_kill_after_the_check_says_memory_grew(tmp_path, victim):
    cgroup = memory_cgroup(1500 << 20)
    if cgroup is None:
        pytest.skip("needs root and a writable cgroup-v1 memory controller to make a cheap OOM kill")
    script = tmp_path / "grew.py"
    script.write_text(SCRIPT)

    try:
        out = subprocess.run([sys.executable, str(script), victim, cgroup, str(tmp_path / "ready")],
                             capture_output=True, text=True, timeout=280, preexec_fn=joining(cgroup))
        assert out.returncode == 0, out.stderr[-3000:]
        died, after = out.stdout.strip().splitlines()
        process, rank, exitcode, oom, message = died.split("|")
        assert (process, exitcode, oom) == (victim, str(-signal.SIGKILL), "True"), died
        assert rank == ("1" if victim == "rank" else "None")
        start = "rank 1 died" if victim == "rank" else "the fork server (pid"
        assert message.startswith(start) and "was killed by SIGKILL: out of memory?" in message, message
        assert "memory grew after the check: it let this test run start with" in message, message
        with open(os.path.join(cgroup, "memory.oom_control")) as f:
            kills = int(f.read().split("oom_kill ")[1].split()[0])
        assert kills >= 1                               # the kernel's own count agrees
        assert after == "[0, 1]"
        left = _procs(cgroup)
        for _ in range(50):                             # ranks see their parent gone and exit within seconds
            if not left:
                break
            time.sleep(0.1)
            left = _procs(cgroup)
        assert left == [], left                         # nothing left in the cgroup once the script ended
    finally:
        remove_cgroup(cgroup)
