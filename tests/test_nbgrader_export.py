"""The nbgrader export: source notebooks with answers in solution markers; nbgrader makes a clean release."""
import json
import os
import subprocess
import sys

import pytest

from netlab.assignment import EXERCISES, build
from netlab.assignment.nbgrader import export


def cells(path):
    return json.load(open(path))["cells"]


def test_export_marks_answers_and_tests(tmp_path):
    folder = export(str(tmp_path / "course"), seed=17)
    for e in EXERCISES:
        prompt, answer, tests = cells(os.path.join(folder, f"exercise_{e.chapter}.ipynb"))
        assert answer["metadata"]["nbgrader"]["solution"] and f"def {e.function}(" in answer["source"]
        assert answer["source"].count("### BEGIN SOLUTION") == 1
        meta = tests["metadata"]["nbgrader"]
        assert meta["grade"] and meta["locked"] and meta["points"] == e.points
        assert f"netlab.check.{e.check}(" in tests["source"] and "seed=17" in tests["source"]
        assert "### BEGIN HIDDEN TESTS" in tests["source"]
    assert {"exercise_ch6.ipynb", "exercise_ch7.ipynb", "exercise_ch8.ipynb"} <= set(os.listdir(folder))


def _nbgrader():
    try:
        import nbgrader  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"nbgrader is not installed in this environment ({sys.executable}: {exc}); the dev extra "
                    "installs it: pip install -e '.[dev]' (or '.[grading]')")
    return [sys.executable, "-m", "nbgrader"]


ENV = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])  # alembic


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_nbgrader_generates_a_release_without_answers_and_validates_the_source(tmp_path):
    nbgrader = _nbgrader()
    course = tmp_path / "course"
    export(str(course), seed=17)
    run = subprocess.run(nbgrader + ["generate_assignment", "netlab", "--force"], cwd=course, env=ENV,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    release = course / "release" / "netlab"
    for e in EXERCISES:
        text = (release / f"exercise_{e.chapter}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "seed=17" not in text
        assert "raise NotImplementedError" in text
    assert build.leaks(str(release)) == []
    # One `nbgrader validate` for the four notebooks (each runs in a kernel of its own; a call costs ~4 s of CPU
    # before the first): the source, with the reference answer, passes its own tests, hidden variant included
    # (ch5 and ch6: no ranks, quick); the release, the student's stub, fails them. nbgrader cuts each error
    # line at Validator.width (90 characters): widened to read the whole message. Its log (stderr) names each
    # notebook as it starts, its verdicts go to stdout: one unbuffered stream, cut at those names, gives
    # each notebook its own verdict.
    notebooks = {(folder, chapter): str(course / folder / "netlab" / f"exercise_{chapter}.ipynb")
                 for folder in ("source", "release") for chapter in ("ch5", "ch6")}
    run = subprocess.run(nbgrader + ["validate", "--Validator.width=1000", *notebooks.values()], cwd=course,
                         env=dict(ENV, PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=600)
    parts = run.stdout.split("Validating '")
    said = {path: next((p for p in parts if p.startswith(path + "'")), None) for path in notebooks.values()}
    for (folder, chapter), path in notebooks.items():
        verdict = said[path]
        assert verdict is not None, f"no verdict for {path}: " + run.stdout[-2000:]
        if folder == "source":
            assert "Success! Your notebook passes all the tests." in verdict, verdict[-2000:]
        else:
            assert "VALIDATION FAILED" in verdict and "not implemented" in verdict, verdict[-2000:]  # the stub
