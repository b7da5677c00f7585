"""Idle pools of the user's other kernels give their ranks back when one kernel needs the memory;
a pool that is running is never interrupted; a killed kernel's files are never acted on.

Every kernel here is a real process with a real pool, all sharing one private TMPDIR (so the run
folder, and the requests in it, are theirs alone: not this suite's, not another lab's).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import psutil
import pytest

from conftest import joining, memory_cgroup, remove_cgroup, running, wait_gone

pytestmark = pytest.mark.slow             # fresh interpreters, each with a pool

HOLDER = textwrap.dedent("""
    import os, sys, time, netlab
    from netlab.runtime import death, shared

    def sleep(comm, seconds):
        time.sleep(seconds)
        return comm.rank

    def hold(comm, gate):
        open(f"{gate}.{comm.rank}", "w").close()        # this rank is running
        while not os.path.exists(gate):                 # until the test lets the run end
            time.sleep(0.02)
        return comm.rank

    netlab.set_idle_timeout(None)                       # only a request can take its ranks
    netlab.run(sleep, 0, ranks=int(sys.argv[2]))
    print("pids", *shared._default.pids, death.forkserver_pid(), flush=True)
    if sys.argv[1] == "busy":
        sys.stdin.readline()                            # the test says when to start the long run
        print("values", netlab.run(hold, sys.argv[3], ranks=int(sys.argv[2]), timeout=120).values, flush=True)
    sys.stdin.readline()                                # stay open until the test is done
    print("pool", shared._default is not None, death.forkserver_pid() is not None, flush=True)
""")

ASKER = textwrap.dedent("""
    import json, sys
    from netlab.runtime import cooperate
    print(json.dumps(cooperate.ask_idle_pools().__dict__), flush=True)
""")


@pytest.fixture
def lab(tmp_path):
    """Start kernels (holder scripts) in one short private TMPDIR; kill whatever is left at the end."""
    tmpdir = tempfile.mkdtemp(prefix="nlc-", dir="/tmp")
    (tmp_path / "holder.py").write_text(HOLDER)
    (tmp_path / "asker.py").write_text(ASKER)
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(TMPDIR=tmpdir, NETLAB_IDLE_S="0")
    procs = []

    def start(script, *args, name=None, preexec_fn=None):
        proc = subprocess.Popen([sys.executable, str(tmp_path / script), *map(str, args)], env=dict(
            env, **({"JPY_SESSION_NAME": f"labs/{name}"} if name else {})), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
        procs.append(proc)
        return proc

    def pool_of(proc):
        line = proc.stdout.readline()
        assert line.startswith("pids"), proc.stderr.read()
        return [int(x) for x in line.split()[1:]]             # ranks, then the fork server

    start.pool_of, start.tmpdir = pool_of, tmpdir
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmpdir, ignore_errors=True)


def _shares(pids):
    """(sum of USS, sum of PSS) of these processes, by psutil: bounds for what they hold."""
    info = [psutil.Process(p).memory_full_info() for p in pids]
    return sum(i.uss for i in info), sum(i.pss for i in info)


def test_an_idle_pool_gives_its_ranks_back_and_a_running_one_is_not_interrupted(lab):
    gate = os.path.join(lab.tmpdir, "busy-gate")         # the busy run lasts until this file exists
    idle = lab("holder.py", "idle", 4, name="01_idle.ipynb")
    busy = lab("holder.py", "busy", 3, gate, name="02_busy.ipynb")
    idle_pids, busy_pids = lab.pool_of(idle), lab.pool_of(busy)
    busy.stdin.write("\n")
    busy.stdin.flush()                                  # its long run starts
    deadline = time.monotonic() + 120
    while not all(os.path.exists(f"{gate}.{r}") for r in range(3)):   # every rank is inside the run
        assert busy.poll() is None and time.monotonic() < deadline, busy.stderr.read() if busy.poll() else "no start"
        time.sleep(0.05)
    uss, pss = _shares(idle_pids)
    asker = lab("asker.py")
    out, err = asker.communicate(timeout=60)
    assert asker.returncode == 0, err
    asked = json.loads(out)
    assert asked["asked"] == 2
    assert asked["released"] == ["01_idle.ipynb"] and asked["busy"] == ["02_busy.ipynb"]
    assert 0.8 * uss <= asked["held_bytes"] <= pss, (asked["held_bytes"], uss, pss)
    assert wait_gone(idle_pids) == []                   # its ranks and its fork server
    assert all(running(p) for p in busy_pids)
    open(gate, "w").close()                             # the run may end now
    assert busy.stdout.readline().strip() == "values [0, 1, 2]"   # the run finished, untouched
    for proc, kept in ((idle, "pool False False"), (busy, "pool True True")):
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == kept


def test_files_of_a_killed_kernel_are_never_acted_on(lab):
    holder = lab("holder.py", "idle", 2, name="01_idle.ipynb")
    pids = lab.pool_of(holder)
    # a kernel that asked and was killed before it could take its request back, and one that held a pool
    dead = subprocess.Popen(["true"])
    dead.wait()
    root = os.path.join(lab.tmpdir, f"netlab-{os.getuid()}")
    key = json.load(open(next(os.path.join(root, d, "holding") for d in os.listdir(root)
                              if os.path.exists(os.path.join(root, d, "holding")))))["key"]
    for what, data in (("release-request", {"id": "dead1", "key": key, "time": time.time()}),
                       ("holding", {"key": key, "name": "gone.ipynb"})):
        folder = os.path.join(root, f"{dead.pid}-1-killed{what[:4]}")
        os.makedirs(folder, mode=0o700)
        with open(os.path.join(folder, what), "w") as f:
            json.dump(data, f)
    time.sleep(2.0)                                     # eight polls
    assert all(running(p) for p in pids)                # the dead kernel's request was ignored
    asker = lab("asker.py")
    start = time.monotonic()
    out, err = asker.communicate(timeout=60)
    asked = json.loads(out)
    assert asked["asked"] == 1 and asked["released"] == ["01_idle.ipynb"], (asked, err)   # not gone.ipynb
    assert wait_gone(pids) == []


NEEDY = textwrap.dedent("""
    import sys
    from netlab.runtime import memory
    status = memory.memory_status()
    held = float(sys.argv[1])
    # a run that does not fit in what is free now, but does once the idle pool's share is back
    per_rank = (status.available - memory.MEMORY_HEADROOM + 0.5 * held) / 4
    memory.check_memory(4, per_rank, "this test run", held=[])
    print("ran", round(status.available / 1e6), flush=True)
""")


def test_the_memory_check_asks_before_it_refuses(lab, tmp_path):
    """In one limited memory cgroup, as on Binder: the run goes ahead, and its output says what was freed."""
    cgroup = memory_cgroup(1500 << 20)
    if cgroup is None:
        pytest.skip("needs root and a writable cgroup-v1 memory controller")
    (tmp_path / "needy.py").write_text(NEEDY)

    try:
        holder = lab("holder.py", "idle", 4, name="03_idle.ipynb", preexec_fn=joining(cgroup))   # kernel, pool inside
        pids = lab.pool_of(holder)
        uss, pss = _shares(pids)
        needy = subprocess.Popen([sys.executable, str(tmp_path / "needy.py"), str(uss)],
                                 preexec_fn=joining(cgroup),
                                 env=dict(os.environ, TMPDIR=lab.tmpdir), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        out, err = needy.communicate(timeout=120)
        assert needy.returncode == 0, err[-2000:]
        freed_line, ran = out.strip().splitlines()
        assert ran.startswith("ran")
        assert freed_line.startswith("netlab: freed ") and freed_line.endswith(
            " GB from 1 idle chapter (03_idle.ipynb) for this test run"), freed_line
        freed = float(freed_line.split()[2]) * 1e9
        assert freed >= 0.5 * uss - 0.05e9, (freed, uss)  # the cgroup's own count (one decimal)
        assert wait_gone(pids) == []
    finally:
        remove_cgroup(cgroup)
