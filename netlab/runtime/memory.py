"""How much memory this process may still use: its own cgroup's limit and usage, and the machine's.

On Binder (and in any container) the limit that the OOM killer enforces is the memory limit of the
cgroup this process belongs to -- not the root of /sys/fs/cgroup, and not the machine's RAM.
``/proc/self/cgroup`` names that cgroup:

* cgroup v2 (one line ``0::/path``): the limit is the smallest ``memory.max`` from that folder up
  to the root, the usage is its ``memory.current``;
* cgroup v1 (a line whose controllers include ``memory``): the same with ``memory.limit_in_bytes``
  and ``memory.usage_in_bytes`` under ``/sys/fs/cgroup/memory``.

Usage counts the page cache; the part the kernel drops first (``inactive_file`` in memory.stat) is
subtracted, as the kubelet does for its "working set". What is free is then the smallest of
(limit - working set) and the machine's ``MemAvailable``. Inside a cgroup namespace the path reads
``/`` and the mounted root *is* the container's cgroup; a path that does not exist under the
mount (a container without its own namespace) falls back to the mount's root.

``rank_bytes`` is the one estimate of a rank's memory that every launcher uses; ``check_memory``
compares a run's estimate with what is free *now*: other notebooks' kernels and their idle rank
pools count against the same 2 GB. When a run would not fit, or would leave less than ``ASK_MARGIN``
to spare, it first asks the idle pools of the user's other kernels to give their ranks back
(``runtime/cooperate.py``), and runs if it fits then, saying what was freed
("freed 0.6 GB from 2 idle chapters"). What it let start is remembered, so that an OOM kill during
the run can say that memory grew after the check (``after_the_check``). Every check can be logged
with its inputs (``NETLAB_MEMORY_LOG``, one JSON line each; ``binder/emulate.py`` reads them). Left
out: swap and memory.high throttling.

One concept: the pool's memory accounting, the limit this process may use and a run's estimate checked
against it.
"""
from __future__ import annotations

import functools
import json
import os
import time
from dataclasses import dataclass

# Kept free beyond a run's own estimate: page cache that cannot be dropped (the shared libraries
# of torch that ranks map), the kernel's own growth in the cells that follow, and the estimates'
# error. Bytes. It was 300 MB: back to back with nine kernels open in 2 GB, that refused chapter 8's
# and 9's runs on 4-9 ranks with 0.5-0.68 GB free, with no OOM kill; at 150 MB (and 27 MB a light
# rank) chapter 8's 9-rank run runs too, still with no OOM kill; with idle kernels collecting their garbage
# no cell is refused (binder/emulate.py --modes back-to-back, docs/instructors.md).
MEMORY_HEADROOM = 150e6
# The fork server that starts ranks, counted when the run must start one (none is running for this
# notebook): its anonymous memory, which its ranks share copy-on-write -- torch (143 MB),
# torch._dynamo with sympy (69 MB: a rank's first optimizer imports it) and netlab's modules, all preloaded
# (preload.py).
# Measured: 233 MB (Anonymous in /proc/PID/smaps_rollup, torch 2.13 CPU, 7 December 2026; 215 MB when the
# preload warmed the FLOP counter rather than an optimizer); tests/test_memory.py holds
# a real fork server under it. Bytes.
FORKSERVER_BYTES = 240e6
# A rank's own memory beyond the tensors it holds (torch's allocator, buffers, the data set): one
# that trains on the digits data set, and one that only times a step or a collective. Bytes. Ranks
# are forked from a fork server with torch loaded, so torch's ~200 MB are shared copy-on-write and
# counted once (in the fork server); what a rank adds is its private memory. Measured with
# benchmarks/rank_memory.py: at most 44 MB per rank in chapter 3's 12-rank parameter-server run (7 MB
# of it tensors), 21 MB in compressed training, 18 MB in a timed step; these bases keep the estimate
# 1.5x or more above each, and tests/test_memory.py holds a real run's ranks under it (an 8-rank pool
# and its fork server grew a memory cgroup by 309 MB: 216 + 240 MB estimated).
RANK_BASE = 60e6
LIGHT_RANK_BASE = 27e6
# Idle pools of other kernels are asked for their ranks when a run would leave less than this free
# beyond its estimate and headroom, not only when it would be refused: the kernel that runs grows too
# (its simulations, a fork server of its own), and an idle pool gives back more than it costs (a
# restart of a few seconds if its chapter runs again). Measured: chapter 5 run right after chapter 4
# at full size in 2 GB passed the check with less than this to spare, and the OOM killer then ended
# three of chapter 4's idle ranks (binder/emulate.py --modes back-to-back). Bytes.
ASK_MARGIN = 500e6
UNLIMITED = 1 << 60          # cgroup v1 writes "no limit" as a huge number (9223372036854771712)


@dataclass
class MemoryStatus:
    limit: int               # bytes this process's cgroup may use (or the machine's RAM)
    used: int                # bytes in use in that cgroup, page cache that can be dropped excluded
    available: int           # bytes a new allocation can still get: min(limit - used, MemAvailable)
    source: str              # where the limit came from, for messages


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _number(text: str | None) -> int | None:
    """A cgroup value in bytes; None for a missing file, 'max' or v1's 'no limit'."""
    if text is None or not text.isdigit():
        return None
    value = int(text)
    return value if value < UNLIMITED else None


def _stat(path: str, key: str) -> int:
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.isdigit():
            return int(value)
    return 0


def _meminfo(root: str) -> tuple[int, int]:
    """(MemTotal, MemAvailable) of the machine in bytes, from /proc/meminfo."""
    fields = {}
    for line in (_read(os.path.join(root, "proc/meminfo")) or "").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * 1024            # the file says kB (KiB)
    total = fields.get("MemTotal") or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return total, fields.get("MemAvailable", total)


def own_cgroup(root: str = "/") -> tuple[str, str, str] | None:
    """(version, mount, folder) of this process's memory cgroup ('v2' or 'v1', absolute paths), or None."""
    v1 = v2 = None
    for line in (_read(os.path.join(root, "proc/self/cgroup")) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if "memory" in controllers.split(","):
            v1 = path
        elif controllers == "" and parts[0] == "0":
            v2 = path
    candidates = []
    if v1 is not None:
        candidates.append(("v1", os.path.join(root, "sys/fs/cgroup/memory"), v1, "memory.limit_in_bytes"))
    if v2 is not None:
        candidates.append(("v2", os.path.join(root, "sys/fs/cgroup"), v2, "memory.max"))
        candidates.append(("v2", os.path.join(root, "sys/fs/cgroup/unified"), v2, "memory.max"))
    for version, mount, path, probe in candidates:
        if not os.path.isdir(mount):
            continue
        folder = os.path.join(mount, path.lstrip("/"))
        if not os.path.isdir(folder):
            folder = mount                                  # no cgroup namespace: the mount is ours
        if version == "v1" or os.path.exists(os.path.join(folder, "memory.current")) or \
                os.path.exists(os.path.join(mount, probe)):
            return version, mount, folder
    return None


def memory_status(root: str = "/") -> MemoryStatus:
    """This process's memory limit, usage and what is still free (see the module docstring)."""
    total, machine_available = _meminfo(root)
    found = own_cgroup(root)
    limit, used, source = None, None, "the machine's memory"
    if found is not None:
        version, mount, folder = found
        limit_file, usage_file, stat_key = (("memory.max", "memory.current", "inactive_file") if version == "v2"
                                            else ("memory.limit_in_bytes", "memory.usage_in_bytes",
                                                  "total_inactive_file"))
        level = folder
        while True:                                         # the tightest limit from here up to the root
            value = _number(_read(os.path.join(level, limit_file)))
            if value is not None and (limit is None or value < limit):
                limit, source = value, f"cgroup {version} {os.path.join(level, limit_file)}"
            if os.path.normpath(level) == os.path.normpath(mount) or len(level) <= len(mount):
                break
            level = os.path.dirname(level)
        usage = _number(_read(os.path.join(folder, usage_file)))
        if usage is not None:
            used = max(0, usage - _stat(os.path.join(folder, "memory.stat"), stat_key))
    if limit is None or limit > total:
        limit, source = total, "the machine's memory"
    available = machine_available if used is None else min(machine_available, max(0, limit - used))
    if used is None:
        used = max(0, total - machine_available)
    return MemoryStatus(int(limit), int(used), int(available), source)


def memory_limit(root: str = "/") -> int:
    """Bytes this process may use: its own cgroup's limit (Binder: 2 GB) or the machine's memory."""
    return memory_status(root).limit


def private_bytes(pid: int, root: str = "/") -> int:
    """Memory only this process holds (Private_Clean + Private_Dirty, from smaps_rollup), in bytes; 0 if gone."""
    total = 0
    for line in (_read(os.path.join(root, f"proc/{pid}/smaps_rollup")) or "").splitlines():
        name, _, rest = line.partition(":")
        if name in ("Private_Clean", "Private_Dirty") and rest.split():
            total += int(rest.split()[0]) * 1024
    return total


def anon_share_bytes(pid: int, root: str = "/") -> int:
    """The process's share of the anonymous memory it maps (Pss_Anon + Pss_Shmem), in bytes; 0 if gone.

    For a fork server and the ranks forked from it, these shares add up to the anonymous memory the
    family holds (torch's pages, shared copy-on-write, are split among them): what ending them all
    gives back. Kernels before 5.x have no Pss_Anon: Private_Dirty stands in (it leaves the shared
    pages out).
    """
    fields = {}
    for line in (_read(os.path.join(root, f"proc/{pid}/smaps_rollup")) or "").splitlines():
        name, _, rest = line.partition(":")
        if rest.split() and rest.split()[0].isdigit():
            fields[name] = int(rest.split()[0]) * 1024
    if "Pss_Anon" in fields:
        return fields["Pss_Anon"] + fields.get("Pss_Shmem", 0)
    return fields.get("Private_Dirty", 0)


def trim_heap() -> bool:
    """Hand the C heap's free pages back to the system; True where that was possible (glibc).

    A kernel that ran a large simulation keeps the pages its freed Python objects and arrays
    occupied: glibc's malloc keeps free memory inside its heap for reuse, so the process's resident
    size stays at its peak. On Binder every open notebook's idle kernel counts against the same 2 GB,
    and ``malloc_trim(0)`` gives those pages back (35 MB in chapter 6's kernel at full size). Called
    when the rank pool is released; it takes milliseconds.

    The cyclic garbage is collected first: fabrics and simulations are graphs of objects that point
    at each other (ports, switches, flows), which only Python's cycle collector frees, and an idle
    kernel allocates nothing that would start it. Chapter 5's kernel at full size, idle: 180 MB
    anonymous, 135 MB after the collection, 115 MB after the trim as well.
    """
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False                     # not glibc (macOS, Windows, musl): nothing to do
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


def rank_bytes(tensor_bytes: float, copies: float, base: float = RANK_BASE) -> float:
    """The memory one rank needs: `copies` tensors of `tensor_bytes` each (model, gradient, optimizer
    state, message buffers) beside the process's own `base`. What ``check_memory`` is given per rank."""
    return base + copies * tensor_bytes


@dataclass
class Check:
    """A run the memory check let start: when, what was free and in use, and its estimate."""
    time: float              # time.monotonic()
    what: str
    ranks: int
    per_rank: float          # bytes
    need: float              # bytes: the ranks, and the fork server when the run starts one
    available: int           # bytes free for it (this notebook's own reusable ranks included)
    used: int
    limit: int


_last_check: Check | None = None


class NotEnoughMemory(MemoryError):
    """check_memory's refusal: `reason` says what the run needs and what is free (bytes: `need`, `free`),
    `advice` what the student can do; the message is both. A caller that can go on another way (the
    challenge board judges a smaller cluster) prints the reason with its own way out."""

    def __init__(self, what: str, need: float, free: float, *, reason: str, advice: str):
        self.what, self.need, self.free, self.reason, self.advice = what, need, free, reason, advice
        super().__init__(f"{reason} {advice}")

    def __reduce__(self):                 # a rank's or sandbox's refusal crosses a pipe whole
        return functools.partial(type(self), reason=self.reason, advice=self.advice), (self.what, self.need, self.free)


def check_memory(ranks: int, per_rank_bytes: float, what: str = "this run", *, root: str = "/",
                 held: list[int] | None = None, forkserver: bool = False) -> None:
    """Refuse, with a clear error, a run whose ranks would not fit in the memory that is free now.

    `held`: pids of ranks the run will reuse or replace (``netlab.runtime.shared.check_memory`` passes the
    shared pool's; this module sits below the runtime and does not look for them). Their own memory
    is already counted as used, so up to `per_rank_bytes` each of it is counted as free.
    `forkserver`: the run must start a fork server too (none runs for this notebook): FORKSERVER_BYTES
    more.
    When it does not fit, or would leave less than ASK_MARGIN to spare, the idle pools of the user's
    other kernels are asked for their ranks first (only for the real machine, `root` "/"). Raising MemoryError here is better than what
    happens otherwise: the OOM killer ends a rank, or the whole kernel, without a word.
    """
    need = ranks * per_rank_bytes + (FORKSERVER_BYTES if forkserver else 0)
    status = memory_status(root)
    if need + MEMORY_HEADROOM + ASK_MARGIN <= status.available:
        _remember(what, ranks, per_rank=per_rank_bytes, need=need, status=status, available=status.available)
        _log_check(what, ranks, per_rank=per_rank_bytes, need=need, status=status, reusable=0, asked=None,
                   verdict="ran")
        return              # fits in what is free: no need to read the ranks' smaps (~15 ms each, every change)
    reusable = sum(min(private_bytes(pid, root), per_rank_bytes) for pid in (held or ()))
    asked = None
    if need + MEMORY_HEADROOM + ASK_MARGIN > status.available + reusable and root == "/":
        from . import cooperate
        asked = cooperate.ask_idle_pools()
        if asked.released:
            before, status = status, memory_status(root)
            freed = max(0, status.available - before.available)
            if need + MEMORY_HEADROOM <= status.available + reusable:
                n = len(asked.released)
                print(f"netlab: freed {freed / 1e9:.1f} GB from {n} idle chapter{'s' if n > 1 else ''} "
                      f"({', '.join(asked.released)}) for {what}", flush=True)
    if need + MEMORY_HEADROOM > status.available + reusable:
        gb = 1e9
        tried = ""
        if asked is not None and asked.asked:
            tried = (f" Idle pools of other notebooks were asked for their ranks first: {len(asked.released)} of "
                     f"{asked.asked} gave them back" + (f" ({len(asked.busy)} busy running)" if asked.busy else "")
                     + ".")
        _log_check(what, ranks, per_rank=per_rank_bytes, need=need, status=status, reusable=reusable, asked=asked,
                   verdict="refused")
        starts = f", and the fork server that starts them, {FORKSERVER_BYTES / 1e6:.0f} MB" if forkserver else ""
        free = status.available + reusable
        raise NotEnoughMemory(
            what, need, free,
            reason=f"{what} needs about {need / gb:.2f} GB ({ranks} ranks x {per_rank_bytes / 1e6:.0f} MB{starts}) plus "
            f"{MEMORY_HEADROOM / gb:.1f} GB to spare, but only {free / gb:.2f} GB is free "
            f"({status.used / gb:.2f} GB of {status.limit / gb:.2f} GB in use, {reusable / gb:.2f} GB of it by this "
            f"notebook's own ranks; limit from {status.source}).{tried}",
            advice="Shut down other notebooks' kernels (or run netlab.shutdown() in them), or use fewer ranks or a "
                   "smaller size.")
    _remember(what, ranks, per_rank=per_rank_bytes, need=need, status=status, available=status.available + reusable)
    _log_check(what, ranks, per_rank=per_rank_bytes, need=need, status=status, reusable=reusable, asked=asked,
               verdict="ran")


def _log_check(what, ranks, per_rank, need, status: MemoryStatus, reusable, asked, verdict) -> None:
    """One JSON line per check in $NETLAB_MEMORY_LOG, when set (binder/emulate.py reads them): its
    inputs (what was free and in use, the estimate, this notebook's reusable ranks), whom it asked
    and what it decided. Bytes; nothing is written where the variable is unset."""
    path = os.environ.get("NETLAB_MEMORY_LOG")
    if not path:
        return
    line = {"time": time.time(), "pid": os.getpid(), "notebook": os.path.basename(os.environ.get("JPY_SESSION_NAME", "")),
            "what": what, "ranks": ranks, "per_rank": int(per_rank), "need": int(need),
            "forkserver": int(need - ranks * per_rank),
            "headroom": int(MEMORY_HEADROOM), "available": status.available, "used": status.used,
            "limit": status.limit, "reusable": int(reusable), "verdict": verdict,
            "asked": asked.asked if asked is not None else 0,
            "released": list(asked.released) if asked is not None else []}
    try:
        with open(path, "a") as f:                 # one short write: lines from several kernels do not mix
            f.write(json.dumps(line) + "\n")
    except OSError:
        pass


def _remember(what, ranks, per_rank, need, status: MemoryStatus, available) -> None:
    global _last_check
    _last_check = Check(time=time.monotonic(), what=what, ranks=ranks, per_rank=per_rank, need=need,
                        available=int(available), used=status.used, limit=status.limit)


def checked_recently(ranks: int, seconds: float) -> bool:
    """Whether a check in the last `seconds` let a run of at least `ranks` ranks start (this process)."""
    check = _last_check
    return check is not None and check.ranks >= ranks and time.monotonic() - check.time <= seconds


REMEMBER_S = 600.0           # a check this old is not taken to be the one that let a run start


def after_the_check(rank_pids: list[int]) -> str:
    """What to add to an OOM kill's error when the memory check let the run start: memory grew after it.

    `rank_pids`: the run's ranks still alive (their private memory is measured now). '' when no check
    in the last REMEMBER_S seconds let a run start.
    """
    check = _last_check
    if check is None or time.monotonic() - check.time > REMEMBER_S:
        return ""
    gb = 1e9
    held = [private_bytes(pid) for pid in rank_pids]
    text = (f"; memory grew after the check: it let {check.what} start with {check.available / gb:.2f} GB free "
            f"for its estimated {check.need / gb:.2f} GB plus {MEMORY_HEADROOM / gb:.1f} GB to "
            f"spare ({check.used / gb:.2f} GB of {check.limit / gb:.2f} GB in use), then an OOM kill came")
    if held and max(held):
        text += (f"; the ranks still alive hold at most {max(held) / 1e6:.0f} MB each (the check allowed "
                 f"{check.per_rank / 1e6:.0f} MB)")
    return text + (": other processes sharing this memory (another notebook's kernel or its ranks) grew, "
                   "or a rank outgrew the estimate")
