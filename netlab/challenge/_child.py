"""The challenge's grading subprocess: ``python -m netlab.challenge._child SPEC.json RESULT.json``.

Loads one entry (source text in SPEC), judges it on the task's real ranks (``judge.py``) and writes the
verdict to RESULT, as its last act (``assignment/sandbox.run_child`` says what a missing RESULT means).
"""
from __future__ import annotations

import json
import os
import sys
import types


def main(spec_path: str, result_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import cloudpickle

    from netlab.challenge.judge import judge
    from netlab.runtime import pool
    pool.use_preload("netlab.challenge._preload")       # its ranks need torch and the lab's blocks, not the chapters'
    from netlab.challenge.tasks import Task
    task = Task.from_dict(spec["task"])
    open(result_path + ".ready", "w").close()             # imports done: the entry's time starts now
    module = types.ModuleType("challenge_entry")
    module.__file__ = spec["origin"]
    sys.modules[module.__name__] = module
    cloudpickle.register_pickle_by_value(module)           # ranks receive its functions by value
    try:
        exec(compile(spec["source"], spec["origin"], "exec"), module.__dict__)
        fn = getattr(module, task.function, None)
        if not callable(fn):
            out = {"verdict": "no entry", "message": f"the file defines no function {task.function}(comm, x)"}
        else:
            out = judge(task, fn, spec.get("seed"))
    except SystemExit as exc:
        out = {"verdict": "error", "message": f"the entry called exit ({exc.code!r})"}
    except BaseException as exc:  # noqa: BLE001 -- everything an entry does wrong is a row, not a crash
        out = {"verdict": "error", "message": f"loading it raised {type(exc).__name__}: {str(exc)[:300]}"}
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
