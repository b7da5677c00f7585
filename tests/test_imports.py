"""No import cycles inside netlab: the graph of module-level imports between its modules is acyclic.

Every module of the package is parsed with ``ast`` (nothing is imported). An edge A -> B is an
import of B that runs when A is imported: a statement at module level, or in a class body, or under
a module-level ``if``/``try``/``with``; not one inside a function (a function-local import is the
accepted way to break a cycle) and not under ``if TYPE_CHECKING:``. ``from P import x`` is an edge
to ``P.x`` when that is a module, else to ``P``. Left out: the parent packages an import runs first
(``netlab/__init__.py`` imports most of the package, so every module would sit on a cycle through it).
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "netlab"

# Cycles that exist today outside netlab/runtime, each as its sorted modules. Frozen so that a new
# cycle fails this test; remove an entry when its cycle is broken.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("netlab",) + path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _module_level(body):
    """The statements that run on import: not function bodies, not ``if TYPE_CHECKING:`` blocks."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _module_level(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _module_level(inner)


def imports_of(name: str, path: pathlib.Path, known: dict) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in _module_level(tree.body):
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


def test_no_import_cycles():
    found = cycles(graph())
    text = "\n".join(" -> ".join(c) for c in found)
    print("import cycles:\n" + (text or "none"))
    new = [c for c in found if tuple(sorted(set(c))) not in KNOWN_CYCLES]
    assert not new, "import cycles (module-level imports; make one of them function-local):\n" + \
        "\n".join(" -> ".join(c) for c in new)
    runtime = [c for c in found if any(m.startswith("netlab.runtime") for m in c)]
    assert not runtime, runtime
