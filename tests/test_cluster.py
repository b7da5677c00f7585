"""Real ranks: results back, a warm pool, clear errors, no process left behind, loopback only."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import psutil
import pytest
import torch

import netlab
from conftest import pool_pids, running, wait_gone



def who_am_i(comm, offset):
    return comm.rank + offset, comm.world_size


def test_results_from_every_rank():
    res = netlab.run(who_am_i, 100, ranks=3)
    assert res.values == [(100, 3), (101, 3), (102, 3)]


@pytest.mark.parametrize("n", [1, 16])
def test_world_sizes_one_to_sixteen(n):
    res = netlab.run(who_am_i, 0, ranks=n)
    assert res.values == [(r, n) for r in range(n)]


def test_pool_is_reused_and_smaller_worlds_need_no_restart():
    netlab.run(who_am_i, 0, ranks=4)
    pids = pool_pids()
    netlab.run(who_am_i, 0, ranks=4)
    assert pool_pids() == pids                       # warm: the same processes
    res = netlab.run(who_am_i, 0, ranks=2)            # smaller: a subgroup of the same pool
    assert res.values == [(0, 2), (1, 2)] and pool_pids()[:4] == pids[:4]


def test_function_defined_in_a_cell_runs_on_ranks():
    exec_globals = {"__name__": "__main__"}
    exec("def cell_fn(comm):\n    return comm.rank * 10\n", exec_globals)
    assert netlab.run(exec_globals["cell_fn"], ranks=2).values == [0, 10]
    assert netlab.run(lambda comm: comm.world_size, ranks=2).values == [2, 2]


def raise_on_rank_2(comm):
    if comm.rank == 2:
        raise ValueError("a deliberate bug")
    t = torch.zeros(4)
    comm.recv(t, 2)                                  # the others would wait for rank 2 forever


def test_a_rank_that_raises_names_the_rank_and_leaves_no_process():
    netlab.run(who_am_i, 0, ranks=4)
    pids = pool_pids()
    # The other ranks wait for rank 2 forever: only the rank's own error can end this run before its
    # timeout, which would raise RankTimeout (not a RankError) instead. No clock is read: a loaded
    # machine makes the error later, never a different one.
    with pytest.raises(netlab.RankError) as info:
        netlab.run(raise_on_rank_2, ranks=4, timeout=60)
    assert info.value.rank == 2 and "rank 2 raised ValueError: a deliberate bug" in str(info.value)
    assert "raise_on_rank_2" in str(info.value)      # the rank's traceback
    assert wait_gone(pids) == []
    assert netlab.run(who_am_i, 0, ranks=4).values[3] == (3, 4)   # and the next run works


def deadlock(comm):
    t = torch.zeros(1)
    comm.recv(t, (comm.rank + 1) % comm.world_size)  # everyone receives, nobody sends


@pytest.mark.slow
def test_a_hang_times_out_with_what_each_rank_waits_for():
    netlab.run(who_am_i, 0, ranks=3)
    pids = pool_pids()
    with pytest.raises(netlab.RankTimeout) as info:
        netlab.run(deadlock, ranks=3, timeout=2, network=netlab.network("1Gbit/s", "5us"))
    assert "run did not finish within 2 s" in str(info.value)          # the timeout it was given, named
    assert "rank 0: waiting in recv from rank 1" in str(info.value)
    assert wait_gone(pids) == []
    assert netlab.run(who_am_i, 0, ranks=3).values[0] == (0, 3)


def sleeps(comm):
    time.sleep(600)


def test_ctrl_c_stops_the_ranks_and_the_next_run_works():
    netlab.run(who_am_i, 0, ranks=3)
    pids = pool_pids()
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(netlab.Interrupted):
        netlab.run(sleeps, ranks=3, timeout=300)
    assert wait_gone(pids) == []
    assert netlab.run(who_am_i, 0, ranks=3).values[2] == (2, 3)


def test_bad_arguments():
    for bad in (0, 17, -1, 2.5, "4", True):
        with pytest.raises(ValueError, match="^ranks:"):
            netlab.run(who_am_i, 0, ranks=bad)
    with pytest.raises(ValueError, match="^timeout:"):
        netlab.run(who_am_i, 0, ranks=2, timeout=0)


def test_everything_binds_to_loopback_only():
    netlab.run(lambda comm: comm.rank, ranks=4)
    parent = psutil.Process()
    listening_before = {c.laddr for c in parent.net_connections("inet") if c.status == psutil.CONN_LISTEN}
    sockets = []
    for pid in pool_pids():
        sockets += psutil.Process(pid).net_connections("inet")
    assert sockets, "gloo ranks should hold TCP connections to each other"
    assert {c.laddr.ip for c in sockets} <= {"127.0.0.1", "::1"}, sockets
    assert {c.raddr.ip for c in sockets if c.raddr} <= {"127.0.0.1", "::1"}
    assert listening_before == set()                  # the rendezvous is a file, not a server


SCRIPT = textwrap.dedent("""
    import os, sys, netlab
    from netlab import collectives
    with open(os.environ["NETLAB_TEST_MARKS"], "a") as f:     # top-level code, no __main__ guard
        f.write(f"{os.getpid()}\\n")

    def total(comm):                     # defined at top level of a script: no __main__ guard needed
        import torch                     # on the ranks only: a lab's kernel does not import torch
        x = torch.full((1000,), float(comm.rank + 1))
        collectives.allreduce(comm, x)
        return x[0].item()

    for _ in range(int(sys.argv[1])):
        assert netlab.run(total, ranks=4, network=netlab.network("1Gbit/s", "5us")).values == [10.0] * 4
    print("pids", *netlab.runtime.shared._default.pids, flush=True)
    if sys.argv[2] == "hang":
        import time; time.sleep(600)
""")


@pytest.fixture(scope="module")
def two_labs(tmp_path_factory):
    """Two labs started at once from the same script (no __main__ guard, run by path), 30 runs each: one
    exits when done, the other hangs and is SIGKILLed, as a kernel dies without any cleanup. Three tests
    read them (no collision; no rank outlives its launcher either way; the script ran once, in the driver)
    instead of starting six fresh interpreters and pools."""
    folder = tmp_path_factory.mktemp("labs")
    path = folder / "lab_script.py"
    path.write_text(SCRIPT)
    labs = {}
    for ending in ("exit", "kill"):
        marks, err = folder / f"marks-{ending}", folder / f"stderr-{ending}"
        with open(err, "w") as stderr:          # a file, not a pipe: a rank that survives cannot hold it open
            proc = subprocess.Popen([sys.executable, str(path), "30", "hang" if ending == "kill" else "exit"],
                                    stdout=subprocess.PIPE, stderr=stderr, text=True,
                                    env={**os.environ, "NETLAB_TEST_MARKS": str(marks)})
        labs[ending] = types.SimpleNamespace(proc=proc, marks=marks, line="", stderr=err, running=None)
    try:
        killed, done = labs["kill"], labs["exit"]
        killed.line = killed.proc.stdout.readline()
        if killed.line.startswith("pids"):
            killed.running = all(running(p) for p in pids_of(killed.line))
        killed.proc.kill()                           # the kernel dies without any cleanup
        killed.proc.wait(timeout=60)
        done.line = done.proc.stdout.readline()
        done.proc.wait(timeout=180)
    finally:
        for lab in labs.values():
            if lab.proc.poll() is None:
                lab.proc.kill()
                lab.proc.wait()
            lab.proc.stdout.close()
            lab.err = lab.stderr.read_text()
    return labs


def pids_of(line):
    return [int(x) for x in line.split()[1:]]


@pytest.mark.slow                       # two labs of fresh processes
def test_two_labs_on_one_machine_do_not_collide(two_labs):
    done, killed = two_labs["exit"], two_labs["kill"]
    assert done.proc.returncode == 0, done.err
    assert done.line.startswith("pids")
    assert killed.line.startswith("pids"), killed.err      # its 30 runs passed too, before it was killed


@pytest.mark.slow                       # a launcher process, killed
@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_no_rank_survives_its_launcher(two_labs, ending):
    lab = two_labs[ending]
    assert lab.line.startswith("pids"), lab.err
    if ending == "kill":
        assert lab.running and lab.proc.returncode == -signal.SIGKILL    # it was killed while its ranks ran
    assert wait_gone(pids_of(lab.line), 10) == []


UNGUARDED = textwrap.dedent("""
    import os, sys, netlab
    with open(os.environ["NETLAB_TEST_MARKS"], "a") as f:     # top-level code, no __main__ guard
        f.write(f"{os.getpid()}\\n")
    print(netlab.run(lambda comm: comm.rank, ranks=2).values, flush=True)
""")


@pytest.mark.slow                       # a fresh interpreter and pool (python -m)
@pytest.mark.parametrize("how", ["path", "module"])
def test_a_script_without_a_main_guard_is_not_rerun_in_the_ranks(tmp_path, how, request):
    """multiprocessing re-runs the caller's __main__ in each child; the pool turns that off (pool._without_main).
    By path: the two labs' script (top-level code, no guard, four ranks each); as a module: its own."""
    if how == "path":
        for lab in request.getfixturevalue("two_labs").values():
            assert lab.line.startswith("pids"), lab.err
            assert lab.marks.read_text().split() == [str(lab.proc.pid)]   # the driver ran it once; no rank did
        return
    (tmp_path / "unguarded_lab.py").write_text(UNGUARDED)
    marks = tmp_path / "marks"
    proc = subprocess.Popen([sys.executable, "-m", "unguarded_lab"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "NETLAB_TEST_MARKS": str(marks)})
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0 and out.strip() == "[0, 1]", err
    assert marks.read_text().split() == [str(proc.pid)]         # the driver ran it once; no rank did
