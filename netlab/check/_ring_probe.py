"""Exercise 2's probe: a copy of the student's x as the reduce-scatter leaves it.

A ring all-reduce's reduce-scatter ends with the rank's (p-1)-th received message and what the rank
does with it; the copy is taken when the rank next calls ``comm`` (the all-gather's first send or
receive), or when the answer returns. Then the check can tell which phase went wrong: if every rank
held one complete chunk at that moment, the all-gather is at fault, else the reduce-scatter.
``watch`` shadows the rank's ``comm.isend``, ``comm.irecv`` and ``comm.wait`` (every receive completes
through ``wait``: ``sendrecv``, ``recv`` and ``irecv`` + ``wait`` alike); it lives in a module of its own
so that ``check.Guard`` lets an answer call them without counting it as netlab's implementation.
"""
from __future__ import annotations

METHODS = ("isend", "irecv", "wait")


def watch(comm, x, after: int) -> dict:
    """Shadow comm's calls; the returned dict gets ``"snapshot"`` (a clone of x) at the first call made after
    `after` more messages have been received (``finish`` takes it if no call came)."""
    box: dict = {"base": comm.messages_recv, "after": after, "x": x}

    def wrap(name):
        method = getattr(type(comm), name)

        def call(*args, **kwargs):
            _take(comm, box)
            return method(comm, *args, **kwargs)
        return call
    for name in METHODS:
        setattr(comm, name, wrap(name))
    return box


def _take(comm, box) -> None:
    if "snapshot" not in box and comm.messages_recv - box["base"] >= box["after"]:
        box["snapshot"] = box["x"].detach().reshape(-1).clone()


def finish(comm, box) -> None:
    """Put comm's methods back; take the copy now if the answer made no call after its last receive."""
    for name in METHODS:
        comm.__dict__.pop(name, None)
    _take(comm, box)
