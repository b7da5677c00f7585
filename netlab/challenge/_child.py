"""One challenge entry judged in a process of its own: ``entry(...)``, forked by the grading host's fork
server (``_host.py``), which has everything below imported already (``_preload.py``).

Loads one entry (source text in its spec), judges it on the task's real ranks (``judge.py``) and writes
the verdict to RESULT, as its last act (a process that dies, exits or hangs leaves none, and the host
says which of those happened).
"""
from __future__ import annotations

import json
import os
import sys
import types


def judge_spec(spec: dict) -> dict:
    """Load the entry in `spec` into this process and judge it: the judge's verdict dict."""
    import cloudpickle

    from netlab.challenge.judge import judge
    from netlab.challenge.tasks import Task
    task = Task.from_dict(spec["task"])
    module = types.ModuleType("challenge_entry")
    module.__file__ = spec["origin"]
    sys.modules[module.__name__] = module
    cloudpickle.register_pickle_by_value(module)           # ranks receive its functions by value
    try:
        exec(compile(spec["source"], spec["origin"], "exec"), module.__dict__)
        fn = getattr(module, task.function, None)
        if not callable(fn):
            return {"verdict": "no entry", "message": f"the file defines no function {task.function}(comm, x)"}
        return judge(task, fn, spec.get("seed"))
    except SystemExit as exc:
        return {"verdict": "error", "message": f"the entry called exit ({exc.code!r})"}
    except BaseException as exc:  # noqa: BLE001 -- everything an entry does wrong is a row, not a crash
        return {"verdict": "error", "message": f"loading it raised {type(exc).__name__}: {str(exc)[:300]}"}


def _use_forkserver(address: str, pid: int) -> None:
    """This process's ranks come from the host's fork server, which is not this process's child: it is
    not this process's to start or stop, and its death is seen in /proc, not by waiting on it."""
    import time
    from multiprocessing import forkserver, resource_tracker

    from netlab.runtime import death
    server = forkserver._forkserver
    server._forkserver_address, server._forkserver_pid = address, pid

    def ensure_running():                 # multiprocessing's own waits on its child, and starts one if none
        resource_tracker.ensure_running()
    server.ensure_running = ensure_running
    server._stop = lambda: None           # the host stops it (runtime/shared.py stops its own when idle)
    own_exit = death.forkserver_exit

    def forkserver_exit(fs_pid, wait: float = 0.0):
        if fs_pid == pid:                 # as death.forkserver_exit waits for its own child: its sockets
            deadline = time.monotonic() + wait          # close a moment before it is a zombie
            while death.start_time(pid) is not None and time.monotonic() < deadline:
                time.sleep(0.02)
            wait = 0.0
        return own_exit(fs_pid, wait)
    death.forkserver_exit = forkserver_exit


def entry(spec: dict, work: str, result_path: str, out, *, forkserver_address: str, forkserver_pid: int,
          cpu_s: int) -> None:
    """The target of the entry's process: sandbox itself as ``assignment/sandbox.run_child`` sandboxes a
    process (its own session, `work` as its empty working folder and HOME, the CPU, file-size and core
    limits, stdout and stderr to `out`), judge, and write the verdict to `result_path` last."""
    os.setsid()                                            # the host kills this session when the entry is done
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    out.close()
    home = os.path.join(work, "home")
    os.mkdir(home)
    os.chdir(home)                                         # its ranks start here too (multiprocessing's prepare)
    os.environ.update(HOME=home, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", MPLBACKEND="Agg")
    from netlab.assignment.sandbox import _limits
    _limits(cpu_s)()                                       # the sandbox's own core, file-size and CPU limits
    _use_forkserver(forkserver_address, forkserver_pid)
    from netlab.runtime import pool, rundir
    out_ = judge_spec(spec)
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out_, f)
    os.replace(tmp, result_path)
    pool._close_all()                                      # a forked process runs no exit handlers: its ranks,
    rundir.remove_now()                                    # its folder
