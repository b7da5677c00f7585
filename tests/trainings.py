"""Chapter 4's trainings, each configuration run once per test session and read by every test file that asks.

``run_training`` here is ``netlab.compress.training.run_training`` with a memo in front of it: the same
arguments, the same ``TrainResult``. A run is deterministic (seeded data, model and compressors; the virtual
clock; the codec charged from the committed calibration), so a second run of one configuration returns the
same numbers, field for field, as the first: that is what makes reading the first one a rerun's equal
(tests/test_compress_train.py's ``test_training_times_are_the_same_under_load_and_on_repeat`` checks it,
and never reads this memo).

The memo is keyed by the whole configuration: every field of ``TrainConfig`` (the method, its options, the
ranks, the model, SGD, the seed, the codec) and the launcher's network, device, efficiency and timeout.
It lives on disk under the session's temporary directory, shared by pytest-xdist's workers (their base
directories are siblings under one parent), one file per configuration, behind a file lock: two workers
that ask for the same run at once run it once, the second waiting for the first. Not memoized: a run with
``sync_factory`` (an answer under test) and one with ``codec="measured"`` (timed on this machine, now).
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import os
import pickle
from pathlib import Path

from filelock import FileLock

from netlab.compress import training
from netlab.compress.config import TrainConfig

_run = training.run_training                  # the real one (a test may patch the module's name with this memo)
_SIGNATURE = inspect.signature(_run)
_where: Path | None = None                    # set by ``share``; None: this process's memory only
_here: dict[str, training.TrainResult] = {}


def share(tmp_path_factory) -> None:
    """Keep the memo under this pytest session's base temporary directory (all xdist workers' parent)."""
    global _where
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    _where = base / "chapter4-trainings"
    _where.mkdir(exist_ok=True)


def key(method="none", **kwargs) -> str | None:
    """The configuration run_training(method, **kwargs) trains, written out whole; None if it is not memoized."""
    bound = _SIGNATURE.bind(method, **kwargs)
    bound.apply_defaults()
    args = dict(bound.arguments)
    settings = args.pop("settings")
    cfg = args.pop("method")
    if not isinstance(cfg, TrainConfig):
        cfg = TrainConfig.of(cfg, **settings)
    if args.pop("sync_factory") is not None or cfg.codec == "measured":
        return None
    fields = dataclasses.asdict(cfg)
    fields["options"] = sorted(fields["options"].items())
    return repr((sorted(fields.items()), sorted(args.items())))


def run_training(method="none", **kwargs) -> training.TrainResult:
    """``netlab.compress.training.run_training(method, **kwargs)``, run once per configuration per session."""
    k = key(method, **kwargs)
    if k is None:
        return _run(method, **kwargs)
    if k in _here:
        return _here[k]
    if _where is None:
        result = _run(method, **kwargs)
    else:
        path = _where / (hashlib.sha256(k.encode()).hexdigest() + ".pickle")
        with FileLock(str(path) + ".lock"):
            if path.exists():
                stored_key, result = pickle.loads(path.read_bytes())
                assert stored_key == k, (stored_key, k)
            else:
                result = _run(method, **kwargs)
                part = path.with_suffix(".part")
                part.write_bytes(pickle.dumps((k, result)))
                part.replace(path)
    _here[k] = result
    return result
