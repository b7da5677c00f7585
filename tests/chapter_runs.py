"""This run's executed chapters: each chapter executed once per pytest run, shared by the tests that need it.

Three users need a chapter executed top to bottom: nbval (the labs/*.ipynb items: every cell must run), the
site test (tests/test_site.py renders the executed chapters) and the torch test (tests/test_kernel_torch.py: the
notebook kernel never imports torch). nbval executes them; this plugin records that execution:

* Recorder. nbval (nbval/plugin.py) runs each cell with ``kernel.execute_cell_input`` and reads every message
  the kernel sends back, keeping the outputs and dropping the rest (comm messages: the widgets). The recorder
  wraps that notebook's kernel (its ``execute_cell_input``, to learn each cell's request id, and its
  ``get_message``, which every message nbval reads passes through) and hands each message whose parent is the
  cell's request to an ``nbclient.NotebookClient`` that has no kernel, through ``process_message``: the same
  filter and the same code nbclient runs when it executes a notebook itself (tools/build_site.py's ``execute``,
  with ``store_widget_state``). Outputs, display updates, ``clear_output``, Output widgets, the widget state and
  its buffers, execution counts and timing metadata come out as nbclient makes them. What nbclient's Output
  widget stand-in sends back to the kernel is dropped: nbval is the only front end here (the chapters never read
  an Output widget's ``outputs`` in the kernel). When the notebook's last cell has passed, and every cell ran in
  order with none failed or skipped, the same kernel is asked (a silent request's user_expressions) which torch
  modules it imported, and the executed notebook is written to ``_build/chapter-runs/<chapter>.ipynb`` with
  tools/build_site.py's key (the chapter's JSON, the sizes, the package's sources) and this run's stamp (xdist's
  ``testrunuid``, shared by the controller and every worker; a fresh one without xdist). A failed cell writes
  ``<chapter>.failed.json`` instead, so that the users fail at once rather than execute a failing chapter again.
* ``executed(path)`` gives the path of this run's executed chapter: the recorded one when its stamp is this
  run's and its key the chapter's current key; else (``pytest tests/test_site.py`` alone, with no notebooks
  collected) the chapter is executed here with ``build_site.execute`` and the same probe, and written there.
* Scheduling: nbval's items, and the files whose tests use this run's chapters (the ``executed_chapter``
  fixture; USERS below), go in one xdist group, "chapters", notebooks first: with ``--dist loadgroup`` (make test)
  one worker runs the notebooks, then their users (tests/scheduling.py spreads the rest).
"""
from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = Path(os.environ.get("NETLAB_CHAPTER_RUNS") or ROOT / "_build" / "chapter-runs")
GROUP = "chapters"
TORCH_PROBE = "sorted(m for m in __import__('sys').modules if m.split('.')[0] == 'torch')"
CELL_TIMEOUT_S = 900                       # as tools/build_site.py's default --cell-timeout

_spec = importlib.util.spec_from_file_location("netlab_build_site", ROOT / "tools" / "build_site.py")
build_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_site)

_stamp: str | None = None


def stamp() -> str:
    """This pytest run's stamp, the same in the controller and every xdist worker."""
    global _stamp
    if _stamp is None:
        _stamp = uuid.uuid4().hex
    return _stamp


def pytest_configure(config):
    global _stamp
    _stamp = getattr(config, "workerinput", {}).get("testrunuid") or _stamp or uuid.uuid4().hex


def key(path: Path) -> str:
    return build_site.key_of(path, build_site.package_digest())


def torch_modules(nb) -> list[str]:
    """The torch modules the chapter's kernel had imported when its last cell had run."""
    return nb.metadata["netlab_run"]["torch_modules"]


def _write(nb, path: Path) -> None:
    import nbformat
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, path)


# ---- the recorder: nbval's execution, as nbclient would have made it ----------------------------------------------
class _FrontendOnly:
    """The kernel client nbclient's Output widget stand-in sends its state back through: nowhere (nbval owns the
    kernel; what nbclient would send back never changes the notebook nbclient records)."""
    class session:
        @staticmethod
        def msg(*args, **kwargs):
            return {}

    class shell_channel:
        @staticmethod
        def send(msg):
            pass


class Recording:
    """One notebook's execution by nbval, fed to a kernel-less NotebookClient."""

    def __init__(self, nbfile):
        from nbclient import NotebookClient
        self.path = Path(str(nbfile.fspath)).resolve()
        self.key = key(self.path)
        self.nb = copy.deepcopy(nbfile.nb)               # what nbval runs, as nbformat read it
        self.client = NotebookClient(self.nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=False,
                                     store_widget_state=True)
        self.client.kc = _FrontendOnly()
        self.code = [i for i, c in enumerate(self.nb.cells) if c.cell_type == "code"]   # nbval's cell_num -> index
        self.next = 0                                   # the cell_num nbval should run next
        self.failed: str | None = None                  # why this is not a whole, passed run
        self.index = self.msg_id = None                 # the cell being run and its request
        self.kernel = nbfile.kernel
        execute_cell_input, get_message = self.kernel.execute_cell_input, self.kernel.get_message

        def recorded_execute(cell_input, allow_stdin=None):
            self.msg_id = execute_cell_input(cell_input, allow_stdin=allow_stdin)
            return self.msg_id

        def recorded_get(stream, timeout=None):
            msg = get_message(stream, timeout=timeout)
            try:
                self.see(stream, msg)
            except Exception as exc:  # noqa: BLE001 -- nbval's test never fails for the recorder
                self.failed, self.index = f"not recorded: {exc!r}", None
            return msg
        self.kernel.execute_cell_input, self.kernel.get_message = recorded_execute, recorded_get

    def begin(self, cell_num: int) -> None:
        self.index = self.msg_id = None
        if self.failed is None and cell_num != self.next:
            self.failed = f"cell {cell_num} ran after cell {self.next - 1} (not every cell, or not in order)"
        if self.failed is not None:
            return
        cell = self.nb.cells[self.code[cell_num]]
        if not cell.source.strip():                     # nbclient does not execute an empty cell
            return
        self.index = self.code[cell_num]
        if self.client.record_timing:
            cell.metadata["execution"] = {}
        cell.outputs = []
        self.client.clear_before_next_output = False

    def see(self, stream: str, msg: dict) -> None:
        """One message nbval read: nbclient's share of it (the cell's request's messages), as nbclient takes it."""
        if self.index is None or self.msg_id is None or msg["parent_header"].get("msg_id") != self.msg_id:
            return
        from nbclient.client import timestamp
        from nbclient.exceptions import CellExecutionComplete
        cell = self.nb.cells[self.index]
        if stream == "shell":
            if self.client.record_timing and msg["msg_type"] == "execute_reply":
                cell.metadata["execution"]["shell.execute_reply"] = timestamp(msg)
            return
        msg = dict(msg, header=dict(msg["header"]))     # nbclient renames an update's header msg_type in place
        try:
            self.client.process_message(msg, cell, self.index)
        except CellExecutionComplete:
            pass

    def end(self, cell_num: int, raised: type | None) -> None:
        if self.failed is None and raised is not None:
            what = "was skipped" if issubclass(raised, pytest.skip.Exception) else "failed"
            self.failed = f"cell {cell_num} {what}"
            if what == "failed":
                _record_failure(self.path, self.key, f"its nbval cell {cell_num} failed")
        if self.failed is not None:
            return
        self.next = cell_num + 1
        if self.index is not None:                      # nbclient numbers the cells it executed 1, 2, ...
            self.client.code_cells_executed += 1
            cell = self.nb.cells[self.index]
            cell.execution_count = self.client.code_cells_executed
            for out in cell.outputs:                    # nbval runs cells with store_history=False
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = cell.execution_count
        self.index = self.msg_id = None
        if self.next == len(self.code):
            self.finish()

    def _ask(self, msg_id: str, timeout: float = 60.0) -> dict:
        kc, deadline = self.kernel.kc, time.monotonic() + timeout
        while True:
            msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

    def finish(self) -> None:
        """Every cell passed: the kernel's language and torch modules, then the executed notebook, written."""
        kc = self.kernel.kc
        info = self._ask(kc.kernel_info())
        self.nb.metadata["language_info"] = info["content"]["language_info"]
        reply = self._ask(kc.execute("", silent=True, store_history=False, allow_stdin=False,
                                     user_expressions={"torch": TORCH_PROBE}))
        value = reply["content"]["user_expressions"]["torch"]
        if value.get("status") != "ok":
            raise RuntimeError(f"the torch probe failed in {self.path.name}'s kernel: {value}")
        self.client.set_widgets_metadata()
        self.nb.metadata["netlab_site_key"] = self.key
        self.nb.metadata["netlab_run"] = {"stamp": stamp(), "executed_by": "nbval",
                                          "torch_modules": ast.literal_eval(value["data"]["text/plain"])}
        _write(self.nb, RUNS / self.path.name)


def _record_failure(path: Path, chapter_key: str, why: str) -> None:
    RUNS.mkdir(parents=True, exist_ok=True)
    (RUNS / f"{path.name}.failed.json").write_text(json.dumps({"stamp": stamp(), "key": chapter_key, "why": why}))


def _is_notebook_cell(item) -> bool:
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return False
    return isinstance(item, IPyNbCell)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not _is_notebook_cell(item):
        yield
        return
    nbfile = item.parent
    rec = getattr(nbfile, "_netlab_recording", None)
    if rec is None and item.cell_num == 0 and nbfile.kernel is not None and nbfile.kernel.is_alive():
        try:
            rec = nbfile._netlab_recording = Recording(nbfile)
        except Exception as exc:  # noqa: BLE001 -- never fail nbval's test for the recorder: its users execute
            item.warn(pytest.PytestWarning(f"chapter_runs: not recording {nbfile.name}: {exc!r}"))
    if rec is not None:
        rec.begin(item.cell_num)
    outcome = yield
    if rec is not None:
        try:
            rec.end(item.cell_num, outcome.excinfo[0] if outcome.excinfo else None)
        except Exception as exc:  # noqa: BLE001 -- the chapter's users then execute it themselves
            rec.failed = f"not recorded: {exc!r}"
            item.warn(pytest.PytestWarning(f"chapter_runs: {nbfile.name} not recorded: {exc!r}"))


# ---- the users: this run's executed chapter -----------------------------------------------------------------------
def _this_run(file: Path, chapter_key: str) -> bool:
    import nbformat
    try:
        nb = nbformat.read(file, as_version=4)
    except (OSError, ValueError):
        return False
    return (nb.metadata.get("netlab_run", {}).get("stamp") == stamp()
            and nb.metadata.get("netlab_site_key") == chapter_key)


@contextlib.contextmanager
def _kernel_environment():
    """What tools/build_site.py's main gives the kernels it starts: this checkout first on PYTHONPATH, one
    OpenMP thread."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "OMP_NUM_THREADS")}
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_here(path: Path):
    """The chapter at `path` executed here by build_site.execute (what make site runs), in a scratch folder beside
    copies of the data files next to it, then asked which torch modules its kernel imported; the notebook."""
    with tempfile.TemporaryDirectory(prefix="netlab-chapter-") as cwd, _kernel_environment():
        for data in path.parent.iterdir():              # as build_site's stage(): files a chapter reads beside it
            if data.is_file() and data.suffix not in (".ipynb", ".json") and not data.name.startswith("."):
                shutil.copy(data, cwd)
        try:
            nb = build_site.execute(path, Path(cwd), CELL_TIMEOUT_S, expressions={"torch": TORCH_PROBE})
        except SystemExit as exc:                       # build_site's message names the chapter and the cell
            pytest.fail(str(exc), pytrace=False)
    found = nb.metadata.pop("netlab_expressions", {}).get("torch")
    if found is None or not found.startswith("["):
        pytest.fail(f"the torch probe failed in {path.name}'s kernel: {found!r}", pytrace=False)
    nb.metadata["netlab_run"] = {"stamp": stamp(), "executed_by": "build_site.execute",
                                 "torch_modules": ast.literal_eval(found)}
    return nb


def executed(path: Path) -> Path:
    """This run's executed chapter `path` (a labs/*.ipynb): the file, recorded from nbval or executed here now."""
    path = Path(path).resolve()
    chapter_key, file = key(path), RUNS / path.name
    if _this_run(file, chapter_key):
        return file
    failed = RUNS / f"{path.name}.failed.json"
    if failed.exists():
        record = json.loads(failed.read_text())
        if record.get("stamp") == stamp() and record.get("key") == chapter_key:
            pytest.fail(f"labs/{path.name} did not execute in this run: {record['why']} (see that failure)",
                        pytrace=False)
    nb = execute_here(path)
    nb.metadata["netlab_site_key"] = chapter_key
    _write(nb, file)
    return file


# ---- scheduling -------------------------------------------------------------------------------------------------------
# The files whose tests use this run's executed chapters (the executed_chapter fixture): the xdist scheduler, which
# sees only test ids, keeps them in the chapters group by this list (pytest_collection_modifyitems checks it).
USERS = ("tests/test_site.py", "tests/test_kernel_torch.py")


def in_group(nodeid: str) -> bool:
    """Whether a test id is in the chapters group: a notebook's cell, or a test in one of USERS."""
    file = nodeid.split("::", 1)[0]
    return file.endswith(".ipynb") or file in USERS


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Notebooks first, then the files that use them, all marked xdist group "chapters" (one worker under
    --dist loadgroup, in this order); the rest keep their order after them."""
    users = {item.path for item in items if "executed_chapter" in getattr(item, "fixturenames", ())}
    unlisted = sorted({str(p.relative_to(config.rootpath)) for p in users} - set(USERS))
    if unlisted:
        raise pytest.UsageError(f"{', '.join(unlisted)} use(s) executed_chapter: add to tests/chapter_runs.py's USERS")
    notebooks = [item for item in items if _is_notebook_cell(item)]
    for item in items:
        if _is_notebook_cell(item) or in_group(item.nodeid):
            item.add_marker(pytest.mark.xdist_group(GROUP))
    first = set(map(id, notebooks))
    items[:] = notebooks + [item for item in items if id(item) not in first]
