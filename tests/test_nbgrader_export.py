"""The nbgrader export: source notebooks with answers in solution markers; nbgrader makes a clean release."""
import json
import os
import shutil
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
    # the source, with the reference answer, passes its own tests, hidden variant included (ch5 and ch6:
    # no ranks, quick)
    for chapter in ("ch5", "ch6"):
        ok = subprocess.run(nbgrader + ["validate", str(course / "source" / "netlab" / f"exercise_{chapter}.ipynb")],
                            cwd=course, env=ENV, capture_output=True, text=True, timeout=600)
        assert "Success! Your notebook passes all the tests." in ok.stdout, ok.stdout[-2000:] + ok.stderr[-2000:]
    # nbgrader cuts each error line at Validator.width (90 characters): widen it to read the whole message
    bad = subprocess.run(nbgrader + ["validate", "--Validator.width=1000", str(release / "exercise_ch5.ipynb")],
                         cwd=course, env=ENV, capture_output=True, text=True, timeout=600)
    assert "VALIDATION FAILED" in bad.stdout and "not implemented" in bad.stdout      # the student's stub
    bad = subprocess.run(nbgrader + ["validate", "--Validator.width=1000", str(release / "exercise_ch6.ipynb")],
                         cwd=course, env=ENV, capture_output=True, text=True, timeout=600)
    assert "VALIDATION FAILED" in bad.stdout and "not implemented" in bad.stdout
