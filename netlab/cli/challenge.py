"""``python -m netlab challenge [NAME]``: the challenge's tasks, their cluster and rules; a starter entry.

    python -m netlab challenge                                   # every task, one line each
    python -m netlab challenge allreduce-4k                      # one task: its fabric and its baselines
    python -m netlab challenge allreduce-4k --starter mine.py    # write an entry to start from
    python -m netlab grade SUBMISSIONS/ --challenge allreduce-4k --leaderboard board/
"""
from __future__ import annotations

import os
import shutil

STARTER = "ring.py"


def add_parser(p) -> None:
    p.add_argument("name", nargs="?", default=None, metavar="NAME", help="a task (default: list them all)")
    p.add_argument("--starter", default=None, metavar="FILE",
                   help="write a starting entry (the ring baseline) to FILE; refuses to overwrite")
    p.add_argument("--baselines", default=None, metavar="DIR",
                   help="copy the task's baseline entries into DIR (a SUBMISSIONS folder to add yours to)")


RULES = ("An entry is a .py file defining allreduce(comm, x): every rank's x (float32) must end as the sum of "
         "all ranks' x, moved with comm's point-to-point calls (send, recv, isend, irecv, sendrecv, wait) or the "
         "lab's blocks built on them (netlab.collectives); torch.distributed is off limits. Score: the virtual "
         "time at which the task's fabric delivers the last message; the same on any machine.")


def main(args) -> int:
    from ..challenge import TASKS, baselines, board, task
    if args.name is None:
        if args.starter or args.baselines:
            raise ValueError("name: which task (e.g. allreduce-4k) to write a starter or baselines for")
        for t in TASKS.values():
            print(f"{t.name:>15}  {t.describe()}")
        print("\n" + RULES)
        return 0
    t = task(args.name)
    folder = baselines(t)
    if args.starter:
        if os.path.exists(args.starter):
            raise ValueError(f"starter: {args.starter!r} exists; choose another file")
        shutil.copyfile(os.path.join(folder, STARTER), args.starter)
        print(f"wrote {args.starter} (the ring baseline): edit allreduce(comm, x), then\n"
              f"  python -m netlab grade FOLDER/ --challenge {t.name} --leaderboard board/")
        return 0
    if args.baselines:
        os.makedirs(args.baselines, exist_ok=True)
        for name, path in board.entries(folder):
            shutil.copyfile(path, os.path.join(args.baselines, f"{name}.py"))
        print(f"copied {', '.join(n for n, _ in board.entries(folder))} into {args.baselines}")
        return 0
    print(t.describe())
    print(f"  {t.ranks} real ranks, {t.count:,} float32 elements each; ranks' time limit {t.rank_timeout_s:g} s")
    print(f"  baselines: {', '.join(n for n, _ in board.entries(folder))} (in {folder})")
    print("\n" + RULES)
    return 0
