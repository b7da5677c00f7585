"""The challenge: a fixed collective on a fixed cluster, scored by its exact virtual time.

    python -m netlab challenge                                    # the tasks, their fabric, the rules
    python -m netlab challenge allreduce-16m --starter mine.py    # a starting point to edit
    python -m netlab grade SUBMISSIONS/ --challenge allreduce-16m --leaderboard board/

A student writes ``allreduce(comm, x)`` with ``comm``'s point-to-point calls (and may use the lab's
blocks built on them), never ``torch.distributed``'s collectives. The judge runs it on the task's real
ranks, checks the sum against ``dist.all_reduce`` on random inputs, and scores the virtual time at which
the task's fabric delivered its last message. The fabric is exact and deterministic, so a score is the
same on any machine, idle or loaded, and a board can be verified by anyone, byte for byte.

* ``tasks.py``: the tasks (``TASKS``) and their cluster;
* ``judge.py``: one entry on real ranks: inputs, the watch on torch.distributed, the check, the score;
* ``board.py``: a folder of entries, each sandboxed, ranked into CSV, JSON and HTML;
* ``baselines/``: the entries on every board to beat, one folder per task.
"""
from __future__ import annotations

import os

from .tasks import TASKS, Task, task

BASELINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines")


def baselines(name) -> str:
    """The folder of a task's baseline entries (a SUBMISSIONS folder for ``netlab grade``)."""
    t = task(name)
    return os.path.join(BASELINES, t.name.split("@")[0].replace("-", "_"))


__all__ = ["TASKS", "Task", "task", "baselines", "BASELINES"]
