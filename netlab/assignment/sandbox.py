"""Run one answer's check in its own process, so that no answer can stop or spoil another's grade.

What the sandbox does: a fresh Python process per (student, exercise), in its own session (its
ranks and fork server are in its process group, all killed together), in an empty temporary
working folder with HOME pointing there; a wall-clock limit counted from the moment the answer starts (after the imports); CPU-time, file-size and core-dump
limits (setrlimit); output read through a pipe and thrown away beyond the first KiB (an answer
that prints gigabytes costs the grader nothing but the time). The result comes back in a file
that only the grading code writes last: a process that dies, exits or hangs has no result, and
the grade says which of those happened.

What it does not do: it is not a security boundary against a hostile student (no seccomp, no
network or filesystem isolation beyond the working folder). For untrusted submissions run the
grader inside a container or VM, as nbgrader's and Otter's documentation also advise.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

START_LIMIT = 300              # seconds to start Python and import torch and netlab (a loaded machine)
KEEP_OUTPUT = 1024             # bytes of the answer's output kept for the grade table
FILE_LIMIT = 64 << 20          # bytes any one file written by the answer may reach


@dataclass
class SandboxedCheck:
    """One answer's check as its sandboxed process left it: the check's verdict, or why there is none."""
    passed: bool
    message: str
    rows: list
    seconds: float
    output: str                # the first KEEP_OUTPUT bytes the answer printed
    output_bytes: int          # how much it printed in all


def _limits(cpu_s: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    return apply


def _drain(pipe, box: dict) -> None:
    kept = bytearray()
    total = 0
    while True:
        chunk = pipe.read(65536)
        if not chunk:
            break
        total += len(chunk)
        if len(kept) < KEEP_OUTPUT:
            kept += chunk[:KEEP_OUTPUT - len(kept)]
    box["output"], box["bytes"] = kept.decode(errors="replace"), total


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class ChildRun:
    """What a grading subprocess left: its result (None if it left none) or why not, and its output."""
    result: dict | None
    why: str
    seconds: float
    output: str
    output_bytes: int


def run_child(module: str, spec: dict, time_limit_s: float, env_extra: dict | None = None,
              *, prefix: str = "netlab-grade-") -> ChildRun:
    """``python -m MODULE SPEC.json RESULT.json`` sandboxed as above; never raises for what the child does.

    The child writes ``RESULT.json.ready`` when its imports are done (the limit counts from then) and
    RESULT.json as its last act."""
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        spec_path, result = os.path.join(work, "spec.json"), os.path.join(work, "result.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        home = os.path.join(work, "home")
        os.mkdir(home)
        env = dict(os.environ, HOME=home, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", MPLBACKEND="Agg",
                   **(env_extra or {}))
        env.pop("NETLAB_IDLE_S", None)
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", module, spec_path, result],
                                cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_limits(int(time_limit_s * 2) + 10))
        box: dict = {}
        reader = threading.Thread(target=_drain, args=(proc.stdout, box), daemon=True)
        reader.start()
        timed_out, answer_started = False, None
        try:
            while proc.poll() is None:                 # the limit counts from the end of the imports
                now = time.monotonic()
                if answer_started is None and os.path.exists(result + ".ready"):
                    answer_started = now
                if now - (answer_started or started) > (time_limit_s if answer_started else START_LIMIT):
                    timed_out = True
                    break
                time.sleep(0.1)
        finally:
            _kill_group(proc.pid)                      # ranks, fork server, anything it started
            proc.wait()
        reader.join(timeout=10)
        seconds = time.monotonic() - started
        output, nbytes = box.get("output", ""), box.get("bytes", 0)
        if not timed_out and os.path.exists(result):
            with open(result) as f:
                return ChildRun(result=json.load(f), why="", seconds=seconds, output=output, output_bytes=nbytes)
        if timed_out and answer_started is None:
            why = f"the grading process did not start within {START_LIMIT} s (the machine is overloaded?)"
        else:
            why = why_ended(proc.returncode, timed_out=timed_out, time_limit_s=time_limit_s)
        return ChildRun(result=None, why=with_last_output(why, output), seconds=seconds,
                        output=output, output_bytes=nbytes)


def why_ended(returncode: int | None, *, timed_out: bool, time_limit_s: float) -> str:
    """Why a grading process left no verdict: it ran out of time, was killed by a signal, or exited."""
    if timed_out:
        return f"time limit of {time_limit_s:g} s exceeded (an endless loop, or a deadlock the check missed?)"
    if returncode < 0:
        return (f"the grading process was killed by {signal.Signals(-returncode).name} "
                "(did the answer kill its own process, or run out of memory or CPU time?)")
    return f"the grading process exited with status {returncode} before the check finished (os._exit?)"


def with_last_output(why: str, output: str) -> str:
    """`why`, and the last line the process printed, if any (200 characters at most)."""
    tail = output.strip().splitlines()[-1:] if output.strip() else []
    return why + (f"; last output: {tail[0][:200]}" if tail else "")


def run_answer(chapter: str, source: str, origin: str, seed: int | None, *, time_limit_s: float) -> SandboxedCheck:
    """Grade one answer in a subprocess; never raises for anything the answer does."""
    run = run_child("netlab.assignment._child",
                    {"chapter": chapter, "source": source, "origin": origin, "seed": seed}, time_limit_s)
    if run.result is not None:
        r = run.result
        return SandboxedCheck(passed=r["passed"], message=r["message"], rows=r["rows"], seconds=run.seconds,
                              output=run.output, output_bytes=run.output_bytes)
    return SandboxedCheck(passed=False, message=run.why, rows=[], seconds=run.seconds, output=run.output,
                          output_bytes=run.output_bytes)
