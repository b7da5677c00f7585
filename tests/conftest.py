import os
import signal
import sys
import time

import matplotlib
import psutil
import pytest

matplotlib.use("Agg")
# A suite started in the background (`make test &`, nohup, a non-interactive `cmd &`) inherits SIGINT and
# SIGHUP ignored, and so would every driver it starts: the Ctrl-C and killed-driver tests would then
# test the shell, not netlab. Give this process, and through it its children, the default handling.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
sys.path.insert(0, os.path.dirname(__file__))          # tests/solutions: reference answers

import chapter_runs  # noqa: E402
import scheduling  # noqa: E402
import netlab  # noqa: E402
from netlab.runtime import shared  # noqa: E402


def pytest_configure(config):
    """tests/chapter_runs.py: nbval's execution of each chapter recorded, for the tests that need the chapter
    executed (the site, the torch check); tests/scheduling.py: how make test spreads the suite over workers."""
    if not config.pluginmanager.is_registered(chapter_runs):
        config.pluginmanager.register(chapter_runs, "netlab_chapter_runs")
    if not config.pluginmanager.is_registered(scheduling):
        config.pluginmanager.register(scheduling, "netlab_scheduling")


@pytest.fixture(scope="session")
def executed_chapter():
    """executed_chapter(path) -> the file of this run's executed chapter `path` (labs/*.ipynb): the one nbval
    executed in this run, recorded (tests/chapter_runs.py), or, when the notebooks were not run (this file
    alone), the chapter executed now by tools/build_site.py's execute. Carries metadata netlab_run:
    torch_modules, the torch modules the chapter's kernel had imported after its last cell."""
    return chapter_runs.executed


def pytest_collection_finish(session):
    """Every test module's functions travel to the ranks by value, as a notebook cell's do: by reference, each
    fresh rank that runs one would import the test file, and with it pytest, matplotlib and the rest (0.25-1
    CPU s a rank)."""
    import cloudpickle
    for module in {getattr(item, "module", None) for item in session.items} - {None}:
        cloudpickle.register_pickle_by_value(module)


def pytest_collection_modifyitems(config, items):
    """Notebook runs (nbval's items from labs/*.ipynb) are slow: `pytest -m "not slow" tests labs`
    leaves them to `make test`. Applies whenever tests/ is collected too (this conftest is loaded)."""
    for item in items:
        if str(item.path).endswith(".ipynb"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def _stop_pool_at_end():
    yield
    netlab.shutdown()


@pytest.fixture
def run_cli(capsys):
    """`netlab <args>` in this process: run_cli(*args) -> (exit status, stdout, stderr).

    Argument errors need no process of their own; each `python -m netlab <command>` keeps one real
    subprocess test (test_cli_flags.py, and test_congestion_cli.py for congestion) for the entry path.
    """
    from netlab import cli

    def run(*args):
        capsys.readouterr()
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:                   # argparse's own errors
            code = exc.code
        out = capsys.readouterr()
        return code, out.out, out.err
    return run


def pool_pids() -> list[int]:
    return list(shared._default.pids) if shared._default is not None and shared._default.alive else []


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


_CGROUPS = []


def memory_cgroup(limit_bytes):
    """A fresh cgroup-v1 memory cgroup under ours limited to `limit_bytes`, or None (not root, cgroup v2,
    read-only): the tests that stand for Binder's 2 GB container run their processes in one. Each call
    makes a new one: a test's cgroup can outlive it for a while (a kernel fixture still inside), and one
    reused with a lower limit refused a higher one (cgroup v1 keeps memory.limit_in_bytes at or below
    memory.memsw.limit_in_bytes), which skipped the next test."""
    from netlab.runtime import death
    if os.geteuid() != 0:
        return None
    counter = death.memory_cgroup(os.getpid())
    if counter is None or not counter.endswith("memory.oom_control"):
        return None
    path = os.path.join(os.path.dirname(counter), f"netlab-oom-test-{os.getpid()}-{len(_CGROUPS)}")
    try:
        os.makedirs(path)
        _CGROUPS.append(path)
        for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            if os.path.exists(os.path.join(path, name)):
                with open(os.path.join(path, name), "w") as f:
                    f.write(str(limit_bytes))
    except OSError:
        return None
    return path


def pytest_sessionfinish(session, exitstatus):
    """The memory cgroups the tests made and could not remove at once (their processes have left now)."""
    for path in _CGROUPS:
        if os.path.isdir(path):
            remove_cgroup(path, seconds=2.0)


def joining(cgroup):
    """A ``preexec_fn`` that moves the child into memory cgroup `cgroup` before it runs, so that it and
    everything it starts are counted and limited there."""
    def join():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return join


def remove_cgroup(path, seconds: float = 10.0) -> None:
    """Remove a test's memory cgroup once its last process has left (rmdir fails while one remains)."""
    for _ in range(int(seconds / 0.1)):
        try:
            os.rmdir(path)
            return
        except OSError:
            time.sleep(0.1)


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """Pids still running after `seconds` (empty when all are gone)."""
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if running(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if running(p)]


# ---- talking to a real Jupyter kernel (jupyter_client): every message matched by its request ----
def _replies(get, msg_id, timeout, what):
    """Messages from `get` (a channel's get_*_msg) whose parent is request `msg_id`, until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{what} {msg_id} within {timeout} s")
        msg = get(timeout=left)
        if msg["parent_header"].get("msg_id") == msg_id:
            yield msg


def shell_reply(kc, msg_id, timeout=120):
    """The shell reply to request `msg_id`, skipping replies to other requests.

    Replies are not all to the request just sent: `wait_for_ready` sends a kernel_info_request
    every second until one is answered (so a slow start leaves extra kernel_info_replies queued),
    and an interrupted cell's reply may arrive late. Only `parent_header.msg_id` says whose it is.
    """
    return next(_replies(kc.get_shell_msg, msg_id, timeout, "no shell reply to"))


def outputs(kc, msg_id, timeout=120):
    """(stdout text, error names) that request `msg_id` produced on iopub, up to its idle status."""
    out, errors = [], []
    for msg in _replies(kc.get_iopub_msg, msg_id, timeout, "the kernel did not go idle after"):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            out.append(content["text"])
        elif kind == "error":
            errors.append(content["ename"])
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), errors


def execute(kc, code, timeout=120):
    """Run code in the kernel; return (status, stdout text, error name or None)."""
    msg_id = kc.execute(code)
    out, errors = outputs(kc, msg_id, timeout)
    reply = shell_reply(kc, msg_id, timeout)
    return reply["content"]["status"], out, errors[0] if errors else None
