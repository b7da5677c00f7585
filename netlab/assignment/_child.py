"""The grading subprocess: ``python -m netlab.assignment._child SPEC.json RESULT.json``.

Loads one student's answer (source text in SPEC), runs the chapter's check on it (with the
seed's variant), and writes ``{"passed", "message", "rows"}`` to RESULT. Only this file's last
act writes RESULT, so a process that dies, hangs or exits early leaves none and the parent says so.
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

    from netlab.assignment import BY_CHAPTER, variants
    exercise = BY_CHAPTER[spec["chapter"]]
    open(result_path + ".ready", "w").close()             # imports done: the answer's time starts now
    module = types.ModuleType(f"student_{exercise.chapter}")
    module.__file__ = spec["origin"]
    sys.modules[module.__name__] = module
    cloudpickle.register_pickle_by_value(module)           # ranks receive its functions by value
    try:
        exec(compile(spec["source"], spec["origin"], "exec"), module.__dict__)
        fn = getattr(module, exercise.function)
        result = variants.run_check(exercise.chapter, fn, spec.get("seed"))
        out = {"passed": bool(result.passed), "message": result.message,
               "rows": [{k: str(v) for k, v in row.items()} for row in result.rows]}
    except SystemExit as exc:
        out = {"passed": False, "message": f"the answer called exit ({exc.code!r})", "rows": []}
    except BaseException as exc:  # noqa: BLE001 -- everything the answer does wrong is a grade, not a crash
        out = {"passed": False, "message": f"raised {type(exc).__name__}: {str(exc)[:500]}", "rows": []}
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
