"""Grade a folder of challenge entries and write the leaderboard: CSV, JSON and an HTML page.

    SUBMISSIONS/alice.py                 an entry: a file that defines allreduce(comm, x)
    SUBMISSIONS/bob/submission.py        or a folder holding one (submission.py, else its only .py file)

Every entry is judged in a sandboxed process of its own (its own session, an empty working folder and
HOME, CPU-time and file-size limits, a wall-clock limit, its output drained), one after another, so an
entry that hangs, crashes, prints without end or kills its process costs only its own row. Those
processes, and each entry's ranks, are forked fresh for every entry from one fork server that a
sandboxed grading host (``_host.py``) starts once per grade with torch and the lab imported: no
entry's code runs in the fork server or the host, and a fork server an entry kills is started again
for the next one. Entries that finish with the right sum are ranked by their virtual time (ties: by
name); the others follow, each with the verdict that says why (``judge.py``).

The board holds only what the entries' runs decide (no wall times, no dates), so grading the same
entries again writes the same bytes: ``leaderboard.csv``, ``leaderboard.json`` and ``leaderboard.html``
(the ranking, each entry's time, busbw and per-link utilisation figure as an embedded PNG).
"""
from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import json
import os
from dataclasses import dataclass, field

from ._host import GradingHost
from .tasks import Task, task as task_of

FIELDS = ["place", "entry", "verdict", "time_us", "algbw_GBps", "busbw_GBps", "messages", "message"]
SUBMISSION = "submission.py"


@dataclass
class Row:
    entry: str
    verdict: str
    message: str
    time_s: float | None = None
    algbw_GBps: float | None = None
    busbw_GBps: float | None = None
    messages: int | None = None
    links: list = field(default_factory=list)
    place: int | None = None

    def cells(self) -> dict:
        f3 = lambda v: "" if v is None else f"{v:.3f}"          # noqa: E731
        return {"place": "" if self.place is None else self.place, "entry": self.entry, "verdict": self.verdict,
                "time_us": "" if self.time_s is None else f"{self.time_s * 1e6:.3f}",
                "algbw_GBps": f3(self.algbw_GBps), "busbw_GBps": f3(self.busbw_GBps),
                "messages": "" if self.messages is None else self.messages, "message": self.message}


def entries(submissions: str) -> list[tuple[str, str | None]]:
    """(name, file) of every entry in the folder, by name; file None for a folder with no entry in it."""
    if not os.path.isdir(submissions):
        raise ValueError(f"SUBMISSIONS: not a folder: {submissions!r}")
    out = []
    for name in sorted(os.listdir(submissions)):
        path = os.path.join(submissions, name)
        if name.startswith((".", "_")):
            continue
        if os.path.isfile(path) and name.endswith(".py"):
            out.append((name[:-3], path))
        elif os.path.isdir(path):
            files = sorted(f for f in os.listdir(path) if f.endswith(".py") and not f.startswith((".", "_")))
            chosen = SUBMISSION if SUBMISSION in files else (files[0] if len(files) == 1 else None)
            out.append((name, os.path.join(path, chosen) if chosen else None))
    if not out:
        raise ValueError(f"SUBMISSIONS: no entries (NAME.py files or NAME/ folders) in {submissions!r}")
    return out


_hosts: list = []              # the host grade() opened, which judge_file uses while it grades


def judge_file(t: Task, path: str, seed: int | None = None, time_limit_s: float | None = None) -> dict:
    """Judge one entry file in its own sandboxed process (``_host.py``); the judge's verdict dict."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    spec = {"task": t.as_dict(), "source": source, "origin": os.path.basename(path), "seed": seed}
    limit = time_limit_s or t.time_limit_s
    open_host = next((h for h in _hosts if h.ranks >= t.ranks and h.time_limit_s == limit), None)
    with (contextlib.nullcontext(open_host) if open_host else GradingHost(t.ranks, limit)) as host:
        run = host.judge(spec)
    if run.result is not None:
        return run.result
    verdict = "timeout" if "time limit" in run.why or "did not start" in run.why else "crashed"
    return {"verdict": verdict, "message": run.why}


def rank_rows(rows: list[Row]) -> list[Row]:
    """Finished entries by time (then name), placed 1, 2, ...; then the rest by name."""
    done = sorted((r for r in rows if r.verdict == "ok"), key=lambda r: (r.time_s, r.entry))
    for i, r in enumerate(done, 1):
        r.place = i
    return done + sorted((r for r in rows if r.verdict != "ok"), key=lambda r: r.entry)


def grade(submissions: str, t, seed: int | None = None, time_limit_s: float | None = None,
          *, progress=None) -> list[Row]:
    """Judge every entry in `submissions` on task `t`, each sandboxed; the ranked rows."""
    t = task_of(t)
    rows = []
    listed = entries(submissions)
    with GradingHost(t.ranks, time_limit_s or t.time_limit_s) as host:
        if any(path for _, path in listed):
            host.start()                     # now, so that no entry's time (nor a test's load) counts its start
        _hosts.append(host)
        try:
            for name, path in listed:
                rows.append(_row(t, name, path, seed=seed, time_limit_s=time_limit_s))
                if progress:
                    progress(rows[-1])
        finally:
            _hosts.remove(host)
    return rank_rows(rows)


def _row(t: Task, name: str, path: str | None, *, seed, time_limit_s) -> Row:
    if path is None:
        return Row(name, "no entry", f"the folder holds no {SUBMISSION} (nor exactly one .py file)")
    v = judge_file(t, path, seed, time_limit_s)
    return Row(entry=name, verdict=v["verdict"], message=v.get("message", ""), time_s=v.get("time_s"),
               algbw_GBps=v.get("algbw_GBps"), busbw_GBps=v.get("busbw_GBps"), messages=v.get("messages"),
               links=v.get("links", []))


# ---- the board ------------------------------------------------------------------------------------------
def board_json(t: Task, rows: list[Row], seed: int | None) -> dict:
    return {"task": t.as_dict(), "description": t.describe(), "units": "GB = 1e9 bytes; time in virtual seconds",
            "inputs": "fresh random per rank" if seed is None else f"seed {seed}",
            "entries": [{"place": r.place, "entry": r.entry, "verdict": r.verdict, "message": r.message,
                         "time_s": r.time_s, "algbw_GBps": r.algbw_GBps, "busbw_GBps": r.busbw_GBps,
                         "messages": r.messages, "links": r.links} for r in rows]}


def _figure_png(t: Task, r: Row) -> bytes:
    from ..figures.challenge import png_bytes, utilisation
    return png_bytes(utilisation(r.links, title=f"{r.entry}: {r.time_s * 1e6:.1f} us, busbw {r.busbw_GBps:.2f} GB/s"))


def board_html(t: Task, rows: list[Row], seed: int | None) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in FIELDS)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in r.cells().values()) + "</tr>" for r in rows)
    figures = []
    for r in rows:
        if r.verdict == "ok" and r.links:
            data = base64.b64encode(_figure_png(t, r)).decode()
            figures.append(f"<figure><img alt='per-link utilisation of {esc(r.entry)}' "
                           f"src='data:image/png;base64,{data}'><figcaption>{esc(r.entry)}: per-link utilisation"
                           "</figcaption></figure>")
    inputs = "fresh random inputs per rank" if seed is None else f"inputs from seed {seed}"
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>netlab challenge: {esc(t.name)}</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:0.2em 0.5em;font-size:90%}figure{display:inline-block;margin:1em}"
            "</style></head><body>"
            f"<h1>netlab challenge: {esc(t.name)}</h1><p>{esc(t.describe())}. Lowest virtual time wins; "
            f"{esc(inputs)}. time in microseconds of virtual time; algbw = bytes / time, busbw = algbw x 2(p-1)/p "
            f"(GB = 1e9 bytes).</p><table><tr>{head}</tr>{body}</table>{''.join(figures)}</body></html>\n")


def write(t, rows: list[Row], out: str, seed: int | None = None) -> dict:
    """Write leaderboard.csv, .json and .html into `out`; their paths."""
    t = task_of(t)
    os.makedirs(out, exist_ok=True)
    paths = {ext: os.path.join(out, f"leaderboard.{ext}") for ext in ("csv", "json", "html")}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r.cells())
    with open(paths["csv"], "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())
    with open(paths["json"], "w", encoding="utf-8") as f:
        json.dump(board_json(t, rows, seed), f, indent=1)
        f.write("\n")
    with open(paths["html"], "w", encoding="utf-8") as f:
        f.write(board_html(t, rows, seed))
    return paths


# ---- the baselines, judged now (the chapter's section) -----------------------------------------------
class Played(list):
    """Ranked rows that show themselves as the board's table in a notebook."""

    def __init__(self, t: Task, rows):
        super().__init__(rows)
        self.task = t

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(c)}</th>" for c in FIELDS[:-1])
        body = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for k, v in r.cells().items() if k != "message")
                       + "</tr>" for r in self)
        return f"<p>{esc(self.task.describe())}</p><table><tr>{head}</tr>{body}</table>"

    def __str__(self) -> str:
        return "\n".join(f"{r.place or '-':>2}  {r.entry:<14} {r.verdict:<12} "
                         f"{'' if r.time_s is None else f'{r.time_s * 1e6:10.3f} us'}" for r in self)


class _FromFile:
    """A baseline's function, loaded from its file where it is called: on the rank, never in the kernel
    (a baseline imports torch, and a chapter's kernel does not: on Binder every open kernel's memory
    counts against the same 2 GB, and torch is about 200 MB of it)."""

    _loaded: dict = {}                                   # per process: (path, function) -> the function

    def __init__(self, path: str, function: str):
        self.path, self.function = path, function
        self.__name__ = function

    def __call__(self, *args):
        key = (self.path, self.function)
        if key not in self._loaded:
            import types
            module = types.ModuleType(f"challenge_baseline_{os.path.basename(os.path.dirname(self.path))}")
            module.__file__ = self.path
            with open(self.path, encoding="utf-8") as f:
                exec(compile(f.read(), self.path, "exec"), module.__dict__)
            self._loaded[key] = getattr(module, self.function)
        return self._loaded[key](*args)


def _fits(t: Task) -> bool:
    """Whether the full-size grade's sandboxes (the task's ranks and a fork server each) fit in the memory
    free now, asking other notebooks' idle pools first, as each sandbox's own check will; if not, says so
    and why (on Binder, with other chapters' kernels open, 32 ranks do not fit in 2 GB)."""
    from ..runtime import memory, shared
    from .judge import rank_bytes
    shared.release_for_another()          # this kernel's idle pool and fork server: the sandboxes need them more
    try:
        memory.check_memory(t.ranks, rank_bytes(t), f"judging the baselines on {t.ranks} ranks", forkserver=True)
    except memory.NotEnoughMemory as exc:
        print(f"netlab: {exc.reason} The board below is judged on a smaller copy of the "
              "cluster instead (2 servers of 4 accelerators, at most 1 MiB); shut down other notebooks' "
              "kernels for the full one.", flush=True)
        return False
    return True


def play(name, small: bool | None = None) -> Played:
    """The task's baselines, judged now and ranked. Full size: each in its own sandbox, as ``netlab grade``
    does (32 ranks, some minutes on two cores). ``small`` (default: when the CI variable is set): on a copy
    of the cluster with 2 servers of 4 and at most 1 MiB, in this kernel's own rank pool (trusted code);
    also at full size when the memory free now cannot hold the full one (said in the output)."""
    from .judge import judge
    from .tasks import task as task_of
    from . import baselines
    t = task_of(name)
    folder = baselines(t)
    if small is None:
        small = bool(os.environ.get("CI"))
    if not small and not _fits(t):
        small = True
    if not small:
        return Played(t, grade(folder, t))
    small_t = t.scaled(hosts=2, accelerators=4, nbytes=min(t.nbytes, 1 << 20))
    rows = []
    for entry, path in entries(folder):
        v = judge(small_t, _FromFile(path, t.function))
        rows.append(Row(entry=entry, verdict=v["verdict"], message=v.get("message", ""), time_s=v.get("time_s"),
                        algbw_GBps=v.get("algbw_GBps"), busbw_GBps=v.get("busbw_GBps"), messages=v.get("messages"),
                        links=v.get("links", [])))
    return Played(small_t, rank_rows(rows))
