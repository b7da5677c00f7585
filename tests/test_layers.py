"""The layers of ``netlab/_layers.py`` are true to the code, the architecture page draws them, and every
long file says why it is one concept.

Imports are read with ``tests/test_imports.py``'s reader (``ast``, every import that can run, a
function-local one too; nothing is imported). An import goes up when the importing module's layer is
below the imported one's; the test names each such import with both layers.
"""
from __future__ import annotations

import ast
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import test_imports  # noqa: E402

from netlab import _layers  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = "One concept:"          # a docstring line of every file over LONG lines starts with this
LONG = 300


def upward(g: dict[str, set[str]]) -> list[str]:
    names = [name for name, _, _ in _layers.LAYERS]
    out = []
    for a in sorted(g):
        for b in sorted(g[a]):
            la, lb = _layers.layer_of(a), _layers.layer_of(b)
            if lb > la:
                out.append(f"{a} ({names[la]}) imports {b} ({names[lb]})")
    return out


def test_every_module_has_a_layer():
    missing = []
    for name in test_imports.modules():
        try:
            _layers.layer_of(name)
        except KeyError as e:
            missing.append(str(e))
    assert not missing, "\n".join(missing)


def test_the_table_places_files_and_folders():
    """Spot checks against the table's own words: a file entry beats its folder, a folder covers its files."""
    index = {name: i for i, (name, _, _) in enumerate(_layers.LAYERS)}
    assert _layers.layer_of("netlab.fabric.tcp") == index["models"]
    assert _layers.layer_of("netlab.dataparallel.train") == index["mechanisms"]
    assert _layers.layer_of("netlab.dataparallel.step") == index["experiments"]
    assert _layers.layer_of("netlab.ps") == index["experiments"]            # ps/__init__.py alone
    assert _layers.layer_of("netlab.ps.server") == index["mechanisms"]
    assert _layers.layer_of("netlab") == index["package"]
    assert _layers.layer_of("netlab.units") == index["floor"]


def test_an_upward_import_is_named(tmp_path, monkeypatch):
    """On a toy package: a floor module importing a lesson, function-locally, is found and named."""
    pkg = tmp_path / "netlab"
    (pkg / "ui").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ui" / "__init__.py").write_text("")
    (pkg / "ui" / "ch1.py").write_text("from .. import units\n")
    (pkg / "units.py").write_text("def f():\n    from .ui import ch1\n    return ch1\n")
    monkeypatch.setattr(test_imports, "ROOT", pkg)
    monkeypatch.setattr(_layers, "_root", lambda: pkg)
    found = upward(test_imports.graph())
    assert found == ["netlab.units (floor) imports netlab.ui.ch1 (lessons)"]


def test_no_import_goes_up():
    found = upward(test_imports.graph())
    assert not found, ("imports that go up a layer (netlab/_layers.py; move the function down to where "
                       "its users are, or pass the dependency in):\n" + "\n".join(found))


def test_the_architecture_page_draws_the_table():
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert _layers.drawing() in page, ("docs/architecture.md's layer drawing is not netlab/_layers.py's; "
                                       "paste netlab._layers.drawing() into its ``` block:\n" + _layers.drawing())


def folder_table(text: str) -> list[str]:
    """The rows of a page's "| folder | mechanism | chapters |" table."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| folder | mechanism"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append(ln)
    return rows


def test_the_readme_and_the_architecture_page_give_one_folder_table_naming_every_folder():
    readme, page = (folder_table((ROOT / name).read_text()) for name in ("README.md", "docs/architecture.md"))
    assert readme == page, "README.md's folder table differs from docs/architecture.md's: copy the page's rows"
    named = {word.strip("`/") for row in page for word in row.split("|")[1].split()}
    folders = {p.name for p in (ROOT / "netlab").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= named, f"netlab/ folders missing from the folder table: {sorted(folders - named)}"


def _docstring(path: pathlib.Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""


def unexplained(root: pathlib.Path) -> list[str]:
    """Files under root over LONG lines whose module docstring has no line starting with MARKER."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > LONG and not any(ln.strip().startswith(MARKER) for ln in _docstring(path).splitlines()):
            out.append(f"{path.relative_to(root.parent)} ({lines} lines)")
    return out


def test_a_long_file_without_the_sentence_is_listed(tmp_path):
    pkg = tmp_path / "netlab"
    pkg.mkdir()
    body = "x = 1\n" * LONG
    (pkg / "long.py").write_text('"""A long file."""\n' + body)
    (pkg / "said.py").write_text(f'"""A long file.\n\n{MARKER} the reason.\n"""\n' + body)
    (pkg / "short.py").write_text('"""Short."""\nx = 1\n')
    assert unexplained(pkg) == [f"netlab/long.py ({LONG + 1} lines)"]


def test_every_long_file_says_why_it_is_one_concept():
    found = unexplained(ROOT / "netlab")
    assert not found, (f"files over {LONG} lines whose docstring has no line starting {MARKER!r} "
                       "(say why the file is one concept, or split it):\n" + "\n".join(found))


@pytest.mark.parametrize("entry", [e for _, _, entries in _layers.LAYERS for e in entries])
def test_every_entry_names_something_that_exists(entry):
    assert (ROOT / "netlab" / entry.rstrip("/")).exists(), f"netlab/_layers.py names {entry}, which is not there"


# ---- the signature rule (tests/test_signatures.py's, on this test's folders) ------------------------
SIGNED = ("cosim", "linuxnet", "cli", "fabric/tcp.py", "fabric/linux_tcp.py")


def loose_signatures():
    import test_signatures
    root = ROOT / "netlab"
    paths = [p for entry in SIGNED for p in ([root / entry] if entry.endswith(".py") else
                                             sorted((root / entry).rglob("*.py")))]
    for path in paths:
        for node, owner in test_signatures._functions(ast.parse(path.read_text())):
            if node.name.startswith("_") and node.name != "__init__" or owner and owner.startswith("_"):
                continue
            positional = node.args.posonlyargs + node.args.args
            if owner and positional and positional[0].arg in ("self", "cls"):
                positional = positional[1:]
            name = f"{path.relative_to(root)}:{owner + '.' if owner else ''}{node.name}"
            yield name, len(positional), len(positional) + len(node.args.kwonlyargs)


def test_signatures_in_the_cosim_linux_and_cli_folders():
    import test_signatures
    found = list(loose_signatures())
    KEYWORD_ONLY = {k: why for k, why in test_signatures.KEYWORD_ONLY.items() if k.startswith(SIGNED)}
    assert any(name == "cosim/live.py:Coordinator.__init__" for name, _, _ in found)
    chains = [f"{name} ({n})" for name, n, _ in found if n > 4]
    loose = [f"{name} ({total})" for name, _, total in found if total > 8 and name not in KEYWORD_ONLY]
    stale = [name for name in KEYWORD_ONLY if not any(n == name and total > 8 for n, _, total in found)]
    assert not chains, f"more than 4 positional parameters, put '*' after the 4th: {', '.join(chains)}"
    assert not loose, f"more than 8 parameters, group them in a config: {', '.join(loose)}"
    assert not stale, f"listed but no longer over 8 parameters: {', '.join(stale)}"
