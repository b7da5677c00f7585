"""No import cycles inside netlab, counting every import: the graph of imports between its modules is acyclic.

Every module of the package is parsed with ``ast`` (nothing is imported). An edge A -> B is an
import of B anywhere in A: at module level, in a class body, under an ``if``/``try``/``with``, or
inside a function. A function-local import only delays the cycle to the first call; it does not
make the two modules independent, so it counts. Left out: imports under ``if TYPE_CHECKING:``
(they never run) and the parent packages an import runs first (``netlab/__init__.py`` imports most
of the package, so every module would sit on a cycle through it). ``from P import x`` is an edge to
``P.x`` when that is a module, else to ``P``.
"""
from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "netlab"


def modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("netlab",) + path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(tree):
    """Every import statement that can run: anywhere in the module, functions included, but not under
    ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def imports_of(name: str, path: pathlib.Path, known: dict) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in _imports(tree):
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    edges.add(f"{target}.{alias.name}")
                elif target in known:
                    edges.add(target)
    edges.discard(name)
    return edges


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle through them."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):                                     # recursive: the package is ~200 modules deep at most
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(g):
        if v not in index:
            visit(v)
    return [_one_cycle(g, set(comp)) for comp in comps]


def _one_cycle(g, comp: set[str]) -> list[str]:
    """A path a -> ... -> a inside one strongly connected component (breadth first from its first module)."""
    start = min(comp)
    parent, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(g[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return path[::-1] + [start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def test_the_graph_sees_the_package():
    g = graph()
    assert "netlab.runtime.comm" in g and "netlab.runtime.clock" in g["netlab.runtime.comm"]
    assert "netlab.runtime.pool" in g["netlab.runtime.shared"]


def test_function_local_imports_are_edges_too(tmp_path, monkeypatch):
    """A cycle hidden behind a function-local import is found (the test's own reading, on a toy package)."""
    pkg = tmp_path / "netlab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", pkg)
    g = graph()
    assert g["netlab.b"] == {"netlab.a"} and g["netlab.c"] == set()
    assert cycles(g) == [["netlab.a", "netlab.b", "netlab.a"]]


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles (every import counts, function-local ones too; move what both need " \
        "below both):\n" + "\n".join(" -> ".join(c) for c in found)
