"""Idle pools of the user's other kernels give their ranks back when this one needs the memory.

On Binder every open notebook's kernel shares one 2 GB cgroup, and a chapter left open keeps its
rank pool (and the fork server, torch loaded) until its idle release, 30 s later. A chapter run
right after another would be refused for memory that an idle pool holds for nothing. So, before
``check_memory`` refuses a run, it asks.

The signal is a few files in the user's run folder (``rundir``: $TMPDIR/netlab-<uid>/, 0700, so no
other user can read or plant one), each inside a driver's own folder, which is swept when that
driver is gone -- a killed kernel leaves nothing that others act on:

    <driver>/holding              this driver holds a pool or a fork server: {"key", "name"}
    <driver>/release-request      this driver asks: {"id", "key", "time"}
    <driver>/answer-<id>-<pid>    driver <pid> answered: {"released", "bytes", "name"}

A driver that holds a pool polls the other drivers' folders every ``POLL_S`` seconds (a few
``stat`` calls) while it holds one. Asked by a live driver in the same memory cgroup (``key``; the
machine where there is none) within ``REQUEST_TTL_S``, it gives its shared pool and fork server
back if no run is in progress -- a running pool is never interrupted -- and answers either way.
The asker waits for every holder's answer, at most ``ANSWER_WAIT_S``. A request whose owner is
gone (pid and start time, as the sweep reads them) or too old is ignored.

Left out: pools made with ``Cluster(...)`` directly (the user holds those on purpose) and kernels of
other users (they cannot read this folder, and Binder gives each user a cgroup of their own).
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field

from . import death, rundir

POLL_S = 0.25               # how often a driver holding a pool looks for requests
ANSWER_WAIT_S = 10.0        # how long the asker waits for the holders' answers, at most (one loaded CPU)
REQUEST_TTL_S = 30.0        # a request older than this is ignored


def cgroup_key() -> str:
    """Which memory this driver shares with others: its memory cgroup's folder, or 'machine'."""
    counter = death.memory_cgroup(os.getpid())
    return os.path.dirname(counter) if counter else "machine"


def chapter_name() -> str:
    """The notebook this kernel runs (JupyterLab sets JPY_SESSION_NAME), else 'pid N'."""
    name = os.environ.get("JPY_SESSION_NAME", "")
    return os.path.basename(name) if name else f"pid {os.getpid()}"


def _write(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _read(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _other_drivers() -> list[str]:
    """Folders of the user's other drivers that are still alive."""
    mine = rundir.driver_dir()
    root = os.path.dirname(mine)
    found = []
    for name in os.listdir(root):
        parts = name.split("-")
        folder = os.path.join(root, name)
        if len(parts) < 3 or not parts[0].isdigit() or folder == mine:
            continue
        if rundir.alive(int(parts[0]), parts[1]):
            found.append(folder)
    return found


@dataclass
class Asked:
    """What asking gave: how many idle pools were asked, which released and what they held."""
    asked: int = 0
    released: list[str] = field(default_factory=list)        # chapter names
    busy: list[str] = field(default_factory=list)
    held_bytes: int = 0                                        # their private memory, as they measured it


_asking = threading.Event()          # this driver is asking: it does not give its own pool away meanwhile


def ask_idle_pools(wait: float = ANSWER_WAIT_S) -> Asked:
    """Ask the idle pools of this user's other drivers (same memory cgroup) to give their ranks back."""
    key = cgroup_key()
    holders = [d for d in _other_drivers() if (_read(os.path.join(d, "holding")) or {}).get("key") == key]
    result = Asked(asked=len(holders))
    if not holders:
        return result
    mine = rundir.driver_dir()
    request_id = f"{os.getpid()}x{time.time_ns()}"
    request = os.path.join(mine, "release-request")
    _asking.set()
    try:
        _write(request, {"id": request_id, "key": key, "time": time.time()})
        deadline = time.monotonic() + wait
        answers: dict[str, dict] = {}
        while time.monotonic() < deadline:
            for name in os.listdir(mine):
                if name.startswith(f"answer-{request_id}-") and name not in answers:
                    data = _read(os.path.join(mine, name))
                    if data is not None:
                        answers[name] = data
            if len(answers) >= len(holders):
                break
            time.sleep(0.05)
    finally:
        _asking.clear()
        for name in os.listdir(mine):
            if name == "release-request" or name.startswith(f"answer-{request_id}-"):
                try:
                    os.unlink(os.path.join(mine, name))
                except OSError:
                    pass
    for data in answers.values():
        (result.released if data.get("released") else result.busy).append(str(data.get("name", "?")))
        result.held_bytes += int(data.get("bytes") or 0)
    return result


class Responder:
    """Answers other drivers' requests while this driver holds a pool (a daemon thread).

    `release()` gives the pool back unless a run is in progress: it returns the bytes it held, or
    None when busy. `holding()` says whether there is still something to give (the thread ends,
    and the holding file goes, when there is not).
    """

    def __init__(self, release, holding):
        self._release, self._holding = release, holding
        self._answered: set[str] = set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def ensure_running(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._folder = rundir.driver_dir()
            self._advertise()
            self._thread = threading.Thread(target=self._loop, name="netlab-release-watch", daemon=True)
            self._thread.start()

    def _advertise(self) -> None:
        self._key = cgroup_key()
        _write(os.path.join(self._folder, "holding"), {"key": self._key, "name": chapter_name()})

    def _loop(self) -> None:
        try:
            while self._holding():
                if cgroup_key() != self._key:          # moved to another cgroup: say where it is now
                    self._advertise()
                self._answer_requests()
                time.sleep(POLL_S)
        finally:
            with self._lock:
                self._thread = None
                if not self._holding():
                    try:
                        os.unlink(os.path.join(self._folder, "holding"))
                    except OSError:
                        pass
            if self._holding():                         # a pool started while this thread was ending
                self.ensure_running()

    def _answer_requests(self) -> None:
        for folder in _other_drivers():
            request = _read(os.path.join(folder, "release-request"))
            if not request or request.get("id") in self._answered or request.get("key") != self._key:
                continue
            self._answered.add(request["id"])
            if time.time() - float(request.get("time", 0)) > REQUEST_TTL_S:
                continue
            held = None if _asking.is_set() else self._release()
            try:
                _write(os.path.join(folder, f"answer-{request['id']}-{os.getpid()}"),
                       {"released": held is not None, "bytes": held or 0, "name": chapter_name()})
            except OSError:                               # the asker went away meanwhile
                pass
