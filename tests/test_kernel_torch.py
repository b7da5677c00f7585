"""The notebook kernel does not import torch: only the ranks do.

For every chapter (labs/*.ipynb, the appendix included), the kernel that ran the whole chapter top to bottom
in this pytest run is asked, once its last cell has run, which torch modules ``sys.modules`` holds: the check
is Python's own record of what was imported, not netlab's, and it covers every line the chapter runs (its
imports, its calls, its panels and exercises as they stand). The kernel is nbval's (the notebook tests;
tests/chapter_runs.py records the answer), or, when this file runs without them, one tools/build_site.py's
execute starts for the chapter. Chapter 4's exercise stands unanswered in the chapter, so one more test runs
its check with an answer written as the chapter asks (``import torch`` inside the function) in a fresh
interpreter: the check runs it on a rank, and that interpreter must not import torch either.
"""
import json
import os
import subprocess
import sys
import textwrap

import nbformat
import pytest

import chapter_runs

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CHAPTERS = [p.name for p in chapter_runs.build_site.chapters()]
PROBE = ("import sys, json\n"
         "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))")
# A kernel that does import torch: what the tests below must catch.
TORCH_CELL = "import netlab.dataparallel.train as t\nt.torch.zeros(1)"

pytestmark = pytest.mark.timeout(3600)    # executing the chapters here, when the notebook tests did not


def assert_no_torch(nb, name):
    modules = chapter_runs.torch_modules(nb)
    assert modules == [], f"{name}'s kernel imported torch: {modules[:8]}"


@pytest.mark.slow                     # reads this run's executed chapter (executes it when the notebooks did not run)
@pytest.mark.parametrize("notebook", CHAPTERS)
def test_a_chapter_kernel_never_imports_torch(executed_chapter, notebook):
    nb = nbformat.read(executed_chapter(os.path.join(ROOT, "labs", notebook)), as_version=4)
    assert_no_torch(nb, notebook)


@pytest.mark.slow                     # a fresh interpreter and a rank pool
def test_a_written_exercise_answer_keeps_torch_in_the_ranks():
    """Chapter 4's exercise check, on an answer that imports torch inside the function as the chapter asks."""
    code = textwrap.dedent("""\
        import netlab
        def answer(grad, residual, ratio):
            import torch
            p = grad + residual
            i = torch.topk(p.abs(), max(1, round(ratio * p.numel()))).indices
            rest = p.clone()
            rest[i] = 0
            return i, p[i], rest
        netlab.check.topk_error_feedback(answer, steps=20).assert_passed()
        """) + PROBE + "\nnetlab.shutdown()"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg",
               OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(ROOT, "labs"), env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


def _notebook_that_imports_torch(folder):
    path = folder / "imports_torch.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import netlab"),
                                         nbformat.v4.new_code_cell(TORCH_CELL)])
    nbformat.write(nb, path)
    return path


@pytest.mark.slow                     # a pytest run with its own kernel, and another kernel
def test_the_check_would_see_torch(tmp_path):
    """Both ways a chapter's kernel gets asked catch one that imports torch (the test above can fail): nbval's
    kernel, recorded (a pytest run of nbval on such a notebook, with tests/chapter_runs.py), and
    build_site.execute's."""
    path = _notebook_that_imports_torch(tmp_path)
    runs = tmp_path / "runs"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), ROOT,
                                                       os.environ.get("PYTHONPATH", "")]),
               NETLAB_CHAPTER_RUNS=str(runs), OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "chapter_runs", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "--rootdir", str(tmp_path), "-q", "--nbval-lax", "--nbval-current-env",
                          str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    recorded = nbformat.read(runs / path.name, as_version=4)
    assert recorded.metadata["netlab_run"]["executed_by"] == "nbval"
    assert "torch" in chapter_runs.torch_modules(recorded)
    with pytest.raises(AssertionError, match="imported torch"):
        assert_no_torch(recorded, path.name)

    executed = chapter_runs.execute_here(path)
    assert executed.metadata["netlab_run"]["executed_by"] == "build_site.execute"
    with pytest.raises(AssertionError, match="imported torch"):
        assert_no_torch(executed, path.name)
