"""tests/chapter_runs.py records nbval's execution of a notebook as nbclient would have made it.

A small notebook with everything nbclient handles beside plain outputs (a display updated by its id, a cell's
clear_output(wait=True), an Output widget that captures and clears, a widget whose value travels as a binary
buffer, an execute_result, stderr) runs under nbval in a pytest run with the recorder; the same notebook is
executed by nbclient as tools/build_site.py executes a chapter. The two executed notebooks must be the same, but
for what differs between any two executions: the widgets' random model ids (numbered in order of appearance) and
the timestamps. A cell that fails leaves no executed notebook, only the record that the chapter failed.
"""
import json
import os
import re
import subprocess
import sys

import nbformat
import pytest

import chapter_runs

pytestmark = pytest.mark.slow              # a pytest run with its kernel, and an nbclient kernel
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

CELLS = [
    "import sys\nimport ipywidgets as w\nfrom IPython.display import clear_output, display\nprint('hello')",
    "h = display('first', display_id=True)\nh.update('second')\nprint('after the update')",
    "out = w.Output()\ndisplay(out)\nwith out:\n    print('in the widget')\n    display('shown')\n"
    "with out:\n    clear_output(wait=True)\n    print('after the clear')",
    "w.Image(value=bytes(range(256)) * 4, format='png')",
    "s = w.IntSlider(3, description='n')\ns.value = 5\ndisplay(s)",
    "for i in range(3):\n    clear_output(wait=True)\n    print(i)",
    "print('to stderr', file=sys.stderr)\n6 * 7",
]


def _write(folder, cells, name):
    path = folder / name
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A chapter")]
                                            + [nbformat.v4.new_code_cell(c) for c in cells],
                                            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                     "language": "python"}}), path)
    return path


def _nbval_run(folder, path):
    """pytest with nbval and the recorder on `path`, recording into folder/runs."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, str(chapter_runs.ROOT), os.environ.get("PYTHONPATH", "")]),
               NETLAB_CHAPTER_RUNS=str(folder / "runs"), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "chapter_runs", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--rootdir", str(folder), "-q", "--nbval-lax", "--nbval-current-env", str(path)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _normal(nb) -> str:
    """The notebook as JSON, timestamps and the run's record dropped, and each widget model's random id replaced by
    its place in a walk from the cells' widget views through the models they refer to."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        cell["metadata"].pop("execution", None)
    for name in [k for k in nb["metadata"] if k.startswith("netlab_")]:
        nb["metadata"].pop(name)
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    order = {}

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("model_id"), str):
                visit(value["model_id"])
            for k in sorted(value):
                walk(value[k])
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith("IPY_MODEL_"):
            visit(value[len("IPY_MODEL_"):])

    def visit(model_id):
        if model_id not in order:
            order[model_id] = f"model-{len(order)}"
            walk(state.get(model_id))
    walk(nb["cells"])
    text = json.dumps(nb, sort_keys=True)
    assert set(state) <= set(order), "a widget model no cell refers to"
    renamed = re.sub(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])", lambda m: order.get(m.group(0), m.group(0)), text)
    return json.dumps(json.loads(renamed), sort_keys=True, indent=1)


def test_the_recorded_notebook_is_the_one_nbclient_makes(tmp_path):
    path = _write(tmp_path, CELLS, "everything.ipynb")
    run = _nbval_run(tmp_path, path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    recorded = nbformat.read(tmp_path / "runs" / path.name, as_version=4)
    assert recorded.metadata["netlab_site_key"] == chapter_runs.key(path)
    assert recorded.metadata["netlab_run"]["executed_by"] == "nbval"
    assert recorded.metadata["netlab_run"]["torch_modules"] == []

    from jupyter_client import KernelManager
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    # The kernel on Unix sockets in this test's folder: over TCP, jupyter_client picks its five ports by binding
    # and releasing them, and a kernel another worker starts meanwhile can take the same ones: the likeliest
    # reason this client once waited 300 s for a reply that never came, its kernel alive (make test, 3 workers).
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel-ipc"))
    NotebookClient(nb, km=km, timeout=120, kernel_name="python3", allow_errors=False, store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    assert any(m.get("buffers") for m in state.values()), "the Image widget's value was not saved as a buffer"
    assert any(m["model_name"] == "OutputModel" and m["state"]["outputs"] for m in state.values())
    assert _normal(recorded) == _normal(nb)


def test_a_failed_cell_leaves_no_executed_notebook(tmp_path):
    path = _write(tmp_path, ["print('ran')", "raise ValueError('the chapter is broken')", "print('not reached')"],
                  "broken.ipynb")
    run = _nbval_run(tmp_path, path)
    assert run.returncode != 0
    assert not (tmp_path / "runs" / path.name).exists()
    failed = json.loads((tmp_path / "runs" / f"{path.name}.failed.json").read_text())
    assert failed["key"] == chapter_runs.key(path) and "cell 1 failed" in failed["why"]
