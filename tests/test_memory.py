"""memory_status reads the process's own cgroup (v1 and v2, up the hierarchy) from a fake tree."""
import os
import platform
import sys
import textwrap
import time

import pytest

from conftest import joining, memory_cgroup, remove_cgroup

from netlab.runtime import memory

GB = 1 << 30


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def meminfo(root, total_gb=24, available_gb=20):
    write(root, "proc/meminfo", f"MemTotal: {total_gb * GB // 1024} kB\nMemFree: 1 kB\n"
                                f"MemAvailable: {available_gb * GB // 1024} kB\n")


def test_v1_reads_the_own_cgroup_not_the_root(tmp_path):
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "4:memory:/binder/pod\n3:cpuset:/\n0::/\n")
    write(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712")    # root: no limit
    write(root, "sys/fs/cgroup/memory/binder/memory.limit_in_bytes", str(3 * GB))
    pod = "sys/fs/cgroup/memory/binder/pod/"
    write(root, pod + "memory.limit_in_bytes", str(2 * GB))
    write(root, pod + "memory.usage_in_bytes", str(GB + 100 * 2**20))
    write(root, pod + "memory.stat", "cache 5\ntotal_inactive_file 104857600\n")        # 100 MiB droppable
    status = memory.memory_status(root)
    assert status.limit == 2 * GB and "binder/pod" in status.source
    assert status.used == GB
    assert status.available == GB                    # 2 GB limit - 1 GB working set (< 20 GB MemAvailable)
    assert memory.memory_limit(root) == 2 * GB


def test_v1_parent_limit_is_tighter(tmp_path):
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "9:memory:/a/b\n")
    write(root, "sys/fs/cgroup/memory/a/memory.limit_in_bytes", str(GB))
    write(root, "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "9223372036854771712")
    write(root, "sys/fs/cgroup/memory/a/b/memory.usage_in_bytes", str(GB // 4))
    assert memory.memory_status(root).limit == GB
    assert memory.memory_status(root).available == GB - GB // 4


def test_v2_walks_up_memory_max_and_subtracts_current(tmp_path):
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "0::/user.slice/lab\n")
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory")
    write(root, "sys/fs/cgroup/user.slice/memory.max", str(2 * GB))
    write(root, "sys/fs/cgroup/user.slice/lab/memory.max", "max")
    write(root, "sys/fs/cgroup/user.slice/lab/memory.current", str(GB // 2))
    write(root, "sys/fs/cgroup/user.slice/lab/memory.stat", "anon 1\ninactive_file 0\n")
    status = memory.memory_status(root)
    assert (status.limit, status.used, status.available) == (2 * GB, GB // 2, 2 * GB - GB // 2)


def test_v2_namespace_root_and_machine_bound(tmp_path):
    root = str(tmp_path)
    meminfo(root, total_gb=8, available_gb=1)
    write(root, "proc/self/cgroup", "0::/\n")                       # inside a cgroup namespace
    write(root, "sys/fs/cgroup/memory.max", str(4 * GB))
    write(root, "sys/fs/cgroup/memory.current", str(GB))
    status = memory.memory_status(root)
    assert status.limit == 4 * GB and status.available == GB      # the machine has only 1 GB free


def test_no_cgroup_means_the_machine(tmp_path):
    root = str(tmp_path)
    meminfo(root, total_gb=16, available_gb=10)
    status = memory.memory_status(root)
    assert (status.limit, status.available) == (16 * GB, 10 * GB)


def test_check_memory_compares_with_what_is_free(tmp_path):
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "0::/pod\n")
    write(root, "sys/fs/cgroup/pod/memory.max", str(2 * GB))
    write(root, "sys/fs/cgroup/pod/memory.current", str(int(1.4 * GB)))  # two kernels already open
    memory.check_memory(2, 100e6, root=root, held=[])                  # 0.2 GB + headroom fits in 0.6 GB
    with pytest.raises(MemoryError, match=r"only 0\.6\d GB is free .*Shut down other notebooks") as refused:
        memory.check_memory(5, 100e6, "this step", root=root, held=[])  # 0.5 GB + 0.15: fits the limit, not what is free
    # the refusal carries its figures and keeps the reason apart from the advice, whole across a pipe
    import pickle
    got = pickle.loads(pickle.dumps(refused.value))
    assert (got.what, got.need, got.free) == ("this step", 5 * 100e6, 2 * GB - int(1.4 * GB))
    assert got.reason.startswith("this step needs about 0.50 GB") and "Shut down" not in got.reason
    assert got.advice.startswith("Shut down other notebooks") and str(got) == f"{got.reason} {got.advice}"
    # this notebook's own pool: 4 ranks holding 150 MB each of their own, reused by the run
    for pid in range(100, 104):
        write(root, f"proc/{pid}/smaps_rollup", "Rss: 300000 kB\nPrivate_Clean: 46875 kB\nPrivate_Dirty: 100000 kB\n")
    assert memory.private_bytes(100, root) == 150_400_000
    memory.check_memory(4, 100e6, "this step", root=root, held=[100, 101, 102, 103])   # 0.4 GB of it reused


def test_this_machine_is_readable():
    status = memory.memory_status()
    assert 0 < status.available <= status.limit and memory.memory_limit() == status.limit


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_trim_heap_frees_cyclic_garbage_first():
    """A fabric is a graph of objects that point at each other: once unreachable, only the cycle
    collector frees it, and an idle kernel allocates nothing that would start the collector. With the
    automatic collector off (the idle kernel's case), a dropped cycle is still alive until trim_heap."""
    import gc
    import weakref

    class Port:
        pass

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        a, b = Port(), Port()
        a.peer, b.peer = b, a
        alive = weakref.ref(a)
        del a, b
        assert alive() is not None                     # unreachable, not freed: a cycle
        memory.trim_heap()
        assert alive() is None
    finally:
        if was_enabled:
            gc.enable()


def test_trim_heap_gives_freed_heap_pages_back():
    """Blocks freed between survivors stay resident in glibc's heap until malloc_trim: the idle kernel's
    case after a large simulation. The blocks are malloc'd here (not Python objects, whose placement is
    the interpreter's) and the kernel is asked, page by page (mincore), whether the whole pages inside
    the freed gaps are resident: all before the trim, none after. The process's total RSS, which other
    threads and earlier tests move, is not read."""
    import ctypes
    import mmap
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page, size, every = mmap.PAGESIZE, 1000, 50

    def resident(start: int, end: int) -> list[bool]:
        """Residency of the whole pages in [start, end)."""
        first, last = -(-start // page) * page, end // page * page
        if last <= first:
            return []
        vec = ctypes.create_string_buffer((last - first) // page)
        assert libc.mincore(first, last - first, vec) == 0, ctypes.get_errno()
        return [b & 1 == 1 for b in vec.raw]

    blocks = [libc.malloc(size) for _ in range(30_000)]           # 30 MB below the mmap threshold: the heap
    for b in blocks:
        ctypes.memset(b, 1, size)                                  # touched: resident
    keep = blocks[::every]                                         # a survivor every 50 KB pins the heap
    gaps = [(a + size, b) for a, b in zip(keep, keep[1:]) if 0 < b - a < 2 * every * size]
    try:
        for b in blocks:
            if b not in keep:
                libc.free(b)
        before = [r for start, end in gaps for r in resident(start, end)]
        assert memory.trim_heap() is True
        after = [r for start, end in gaps for r in resident(start, end)]
    finally:
        for b in keep:
            libc.free(b)
    # each 49 KB gap holds 10 or 11 whole pages: thousands in all, every one resident before the trim;
    # after it all but a few (21 of 6,087 when this was written: blocks glibc kept for reuse) are gone.
    # How many survivors sit next to each other depends on how fragmented earlier tests left the heap
    # (548 gaps when run alone, 387 after the quick suite): a hundred is plenty to tell a trim from none
    assert len(gaps) > 100 and len(before) > 10 * len(gaps) and all(before)
    assert sum(after) <= 2 * len(gaps), (sum(after), len(after))


@pytest.mark.slow                        # a real 6-rank parameter-server run, sampled while it goes
@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs /proc/PID/smaps_rollup")
def test_a_real_runs_ranks_stay_within_the_estimate_the_memory_check_uses(monkeypatch):
    """The check's per-rank estimate (memory.RANK_BASE + the tensors) must cover what each forked rank
    really adds, its private memory, or the check would let the OOM killer in; sampled every 20 ms."""
    import threading
    import time

    import netlab
    from netlab import ps
    from netlab.runtime import shared
    asked, peak, stop = [], {}, threading.Event()
    original = shared.check_memory
    monkeypatch.setattr(shared, "check_memory", lambda ranks, per_rank, *a, **k: (asked.append(per_rank),
                                                                                  original(ranks, per_rank, *a, **k)))

    def sample():
        while not stop.is_set():
            pool = shared._default
            for pid in (list(pool.pids) if pool is not None else []):
                peak[pid] = max(peak.get(pid, 0), memory.private_bytes(pid))
            time.sleep(0.02)

    netlab.shutdown()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        ps.run_ps(workers=4, servers=2, mode="bsp", steps=10, width=512, bandwidth="1Gbit/s", latency="5us")
    finally:
        stop.set()
        sampler.join()
    assert asked and len(peak) == 6 and min(peak.values()) > 5e6          # it sampled real ranks
    assert max(peak.values()) < asked[-1], (max(peak.values()), asked[-1])


def test_a_run_that_starts_a_fork_server_counts_it(tmp_path):
    """Four ranks that fit what is free on their own are refused when the fork server that would
    start them does not fit beside them, and the error says so."""
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "0::/pod\n")
    write(root, "sys/fs/cgroup/pod/memory.max", str(2 * GB))
    write(root, "sys/fs/cgroup/pod/memory.current", str(int(1.4 * GB)))   # 0.64 GB free
    per_rank = 100e6                                   # 0.4 GB + 0.15 GB headroom: fits without a fork server
    memory.check_memory(4, per_rank, root=root, held=[])
    with pytest.raises(MemoryError, match=r"needs about 0\.64 GB \(4 ranks x 100 MB, and the fork server that "
                                          r"starts them, 240 MB\)"):
        memory.check_memory(4, per_rank, "this run", root=root, held=[], forkserver=True)


def test_each_check_is_logged_with_its_inputs_when_asked(tmp_path, monkeypatch):
    root = str(tmp_path)
    meminfo(root)
    write(root, "proc/self/cgroup", "0::/pod\n")
    write(root, "sys/fs/cgroup/pod/memory.max", str(2 * GB))
    write(root, "sys/fs/cgroup/pod/memory.current", str(GB))
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv("NETLAB_MEMORY_LOG", str(log))
    monkeypatch.setenv("JPY_SESSION_NAME", "labs/05_topology.ipynb")
    memory.check_memory(2, 100e6, "this step", root=root, held=[], forkserver=True)
    with pytest.raises(MemoryError):
        memory.check_memory(12, 100e6, "that step", root=root, held=[])
    import json
    ran, refused = [json.loads(line) for line in log.read_text().splitlines()]
    assert (ran["what"], ran["verdict"], ran["notebook"]) == ("this step", "ran", "05_topology.ipynb")
    assert ran["need"] == 200e6 + memory.FORKSERVER_BYTES and ran["forkserver"] == memory.FORKSERVER_BYTES
    assert ran["available"] == GB and ran["used"] == GB and ran["limit"] == 2 * GB
    assert (refused["verdict"], refused["need"], refused["forkserver"]) == ("refused", 1.2e9, 0)


POOL_START = textwrap.dedent("""
    import json, os, sys, time
    import netlab
    from netlab.runtime import death, shared

    def usage():
        return int(open(os.path.join(sys.argv[1], "memory.usage_in_bytes")).read())

    time.sleep(1.0)
    before = usage()
    netlab.run(lambda comm: comm.rank, ranks=8)                 # nothing checked it before: the pool start does
    time.sleep(1.0)
    print(json.dumps({"grew": usage() - before, "pids": shared._default.pids, "fs": death.forkserver_pid()}))
    netlab.shutdown()
""")


@pytest.mark.slow                        # a fresh interpreter starts a fork server and 8 ranks in a cgroup
@pytest.mark.timeout(300)
def test_a_pool_start_is_checked_and_its_estimate_covers_what_the_cgroup_counts(tmp_path):
    """netlab.run of a function nobody checked starts 8 ranks and a fork server; the check at the pool's
    start must have counted both, and its estimate must cover what the memory cgroup (the OOM killer's
    own count) grew by."""
    import json
    import subprocess
    sys.path.insert(0, os.path.dirname(__file__))
    cgroup = memory_cgroup(4 << 30)
    if cgroup is None:
        pytest.skip("needs root and a writable cgroup-v1 memory controller")
    (tmp_path / "start.py").write_text(POOL_START)
    log = tmp_path / "checks.jsonl"

    try:
        run = subprocess.run([sys.executable, str(tmp_path / "start.py"), cgroup], preexec_fn=joining(cgroup),
                             env=dict(os.environ, NETLAB_MEMORY_LOG=str(log), NETLAB_IDLE_S="0"),
                             capture_output=True, text=True, timeout=240)
        assert run.returncode == 0, run.stderr[-2000:]
        grew = json.loads(run.stdout.strip().splitlines()[-1])["grew"]
        check, = [json.loads(line) for line in log.read_text().splitlines()]
        assert check["what"] == "this run on 8 ranks" and check["verdict"] == "ran"
        assert check["forkserver"] == memory.FORKSERVER_BYTES          # none ran: it had to start one
        assert 0.5 * check["need"] < grew < check["need"], (grew, check["need"])   # counted, not wildly over
    finally:
        remove_cgroup(cgroup)


@pytest.mark.slow                        # starts pools in this process
@pytest.mark.timeout(300)
def test_netlab_run_checks_each_pool_it_starts_once_counting_the_fork_server_only_when_none_runs(monkeypatch):
    import netlab
    from netlab.runtime import death, shared
    calls = []
    original = memory.check_memory

    def spy(ranks, per_rank, what="this run", *, root="/", held=None, forkserver=False):
        calls.append((ranks, per_rank, what, sorted(held or []), forkserver))
        return original(ranks, per_rank, what, root=root, held=held, forkserver=forkserver)
    netlab.shutdown()
    shared._stop_forkserver_if_unused()
    assert death.forkserver_pid() is None
    monkeypatch.setattr(memory, "check_memory", spy)
    monkeypatch.setattr(memory, "_last_check", None)        # the fake-tree checks above count as recent ones
    try:
        netlab.run(lambda comm: comm.rank, ranks=2)                  # a pool and a fork server start
        assert calls == [(2, memory.LIGHT_RANK_BASE, "this run on 2 ranks", [], True)]
        first = sorted(shared._default.pids)
        netlab.run(lambda comm: comm.rank, ranks=2)                  # reused: nothing to check
        netlab.run(lambda comm: comm.rank, ranks=1)
        assert len(calls) == 1
        netlab.run(lambda comm: comm.rank, ranks=3)                  # replaced: its ranks count as free
        assert calls[1] == (3, memory.LIGHT_RANK_BASE, "this run on 3 ranks", first, False)
        shared.check_memory(4, 60e6, "this test run")                # the caller's own, larger estimate
        netlab.run(lambda comm: comm.rank, ranks=4)                  # ... is not checked again
        assert [c[2] for c in calls] == ["this run on 2 ranks", "this run on 3 ranks", "this test run"]
        assert calls[2][4] is False                                  # the fork server already runs
    finally:
        netlab.shutdown()
