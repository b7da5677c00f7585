"""The cells of a chapter its widgets need, found by reading the cells (``ast``), not by running them.

The browser test (tests/test_browser.py) checks the chapters' panels; nbval already runs every cell of
every chapter in a kernel. So the browser runs a copy of the chapter that keeps:

* every cell that displays a widget: one that uses a name imported from ``netlab.ui`` or ``ipywidgets``
  (a panel class, ``questions``, ``ch2``), or a name such a cell defines (``panel``), or reaches
  ``netlab.ui`` through an attribute;
* every earlier cell that defines, rebinds, deletes or changes a name a kept cell uses (an assignment,
  an attribute or item stored, ``+=``, a method called on it: ``rows.append(...)``), and so on
  transitively;
* every cell the reading cannot follow: a magic or shell line (``%``, ``!``), ``exec``/``eval``,
  ``globals()``, a star import, an import inside ``if``/``try``/``with`` at the top level, a syntax error;
* every import any cell makes: a cell not kept for the reasons above keeps its top-level import
  statements only (a module's import may register or patch something the panels then see).

The markdown cells stay (the page looks as a student's does). What is left out is computation whose
results no widget reads: a chapter's experiments, tables and figures. What a panel then sees is what a
student sees who runs the set-up cell and goes straight to the panel, a path a student takes.
"""
from __future__ import annotations

import ast
import builtins
import json
from dataclasses import dataclass, field

WIDGET_MODULES = ("netlab.ui", "ipywidgets")
UNREADABLE_CALLS = {"exec", "eval", "globals", "locals", "vars", "__import__", "get_ipython", "execfile"}
LEFT_OUT = "# (the browser test runs only this cell's imports: tests/panel_cells.py)\n"


@dataclass
class Cell:
    """What one code cell does with names, as far as reading it tells."""
    source: str
    defines: set = field(default_factory=set)       # names it binds (or unbinds) at the top level
    uses: set = field(default_factory=set)          # names it reads, in functions it defines too
    changes: set = field(default_factory=set)       # names whose object it may change in place
    modules: dict = field(default_factory=dict)     # name bound by an import: the module it came from
    imports: list = field(default_factory=list)     # its top-level import statements' source
    assigns: list = field(default_factory=list)     # its top-level assignments: (names bound, names read)
    attributes: set = field(default_factory=set)    # dotted names it reads: "netlab.ui", "np.random"
    unreadable: str | None = None                   # why the reading cannot follow it (None: it can)


def _makes_widgets(module: str) -> bool:
    """Whether a name imported as `module` (dotted: netlab.ui.ch5.describe) may build a widget: anything
    from netlab.ui or ipywidgets (a module, a class, a function) but a function annotated to return
    plain data (netlab.ui.ch5.describe -> str)."""
    if not any(module == m or module.startswith(m + ".") for m in WIDGET_MODULES):
        return False
    import importlib
    import inspect
    parent, _, name = module.rpartition(".")
    try:
        found = importlib.import_module(module)
    except ImportError:
        try:
            found = getattr(importlib.import_module(parent), name)
        except (ImportError, AttributeError):
            return True
    if inspect.isfunction(found):
        returns = inspect.signature(found).return_annotation
        return returns not in ("str", "int", "float", "bool", "dict", "list", "tuple", "None",
                               str, int, float, bool, dict, list, tuple, None)
    return True


def read_cell(source: str) -> Cell:
    cell = Cell(source)
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        python = TransformerManager().transform_cell(source)
    except Exception as e:                          # noqa: BLE001 - anything: the cell is run whole
        cell.unreadable = f"IPython cannot transform it ({e})"
        return cell
    if python.strip() != source.strip() and "get_ipython()" in python:
        cell.unreadable = "a magic or shell line"      # (IPython turns it into get_ipython() calls)
    try:
        tree = ast.parse(python)
    except SyntaxError as e:
        cell.unreadable = f"a syntax error ({e.msg})"
        return cell
    lines = python.splitlines(keepends=True)
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            cell.imports.append("".join(lines[stmt.lineno - 1:stmt.end_lineno]))
    _Reader(cell).visit(tree)
    return cell


class _Reader(ast.NodeVisitor):
    """Collects a cell's names; `depth` > 0 inside a function (its locals are not the notebook's)."""

    def __init__(self, cell: Cell):
        self.cell, self.depth, self.top = cell, 0, True

    def visit_Module(self, node):
        for stmt in node.body:                      # an import in a block here (if, try, with): unreadable
            self.top = isinstance(stmt, (ast.Import, ast.ImportFrom))
            self.visit(stmt)

    def visit_Assign(self, node):
        if self.depth == 0:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} if node.value else set()
            self.cell.assigns.append((bound, read))
        self.generic_visit(node)

    visit_AnnAssign = visit_Assign

    def _bind(self, name: str):
        if self.depth == 0:
            self.cell.defines.add(name)

    def _import(self, node, module_of):
        if not self.top and self.depth == 0:
            self.cell.unreadable = self.cell.unreadable or "an import inside a top-level block"
        for alias in node.names:
            if alias.name == "*":
                self.cell.unreadable = "a star import"
                continue
            bound = alias.asname or alias.name.split(".")[0]
            self._bind(bound)
            if self.depth == 0:
                self.cell.modules[bound] = module_of(alias)

    def visit_Import(self, node):
        self._import(node, lambda a: a.name if a.asname else a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        base = "." * node.level + (node.module or "")
        self._import(node, lambda a: f"{base}.{a.name}")

    def _function(self, node):
        self._bind(node.name)
        for d in node.decorator_list:
            self.visit(d)
        if not isinstance(node, ast.ClassDef):
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                self.visit(default)
        else:
            for b in node.bases + [k.value for k in node.keywords]:
                self.visit(b)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _function

    def visit_Lambda(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_Global(self, node):
        self.cell.defines.update(node.names)        # a function that rebinds the notebook's names

    visit_Nonlocal = visit_Global

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.cell.uses.add(node.id)
            if node.id in UNREADABLE_CALLS and not (node.id == "get_ipython" and self.cell.unreadable):
                self.cell.unreadable = f"it calls {node.id}"
        else:
            self._bind(node.id)                     # Store or Del

    def _changed(self, target):
        while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            target = target.value
        if isinstance(target, ast.Name):
            self.cell.changes.add(target.id)

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            self._changed(node)
        if isinstance(node.value, ast.Name):
            self.cell.attributes.add(f"{node.value.id}.{node.attr}")
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            self._changed(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._changed(node.target)
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute):    # x.method(...): may change x in place
            self._changed(node.func.value)
        self.generic_visit(node)


@dataclass
class Choice:
    """What the browser runs of each code cell: 'whole', 'imports' (its import lines only) or 'none', and why."""
    run: list
    why: list

    def summary(self) -> str:
        whole = [str(i) for i, r in enumerate(self.run) if r == "whole"]
        imports = [str(i) for i, r in enumerate(self.run) if r == "imports"]
        return (f"{len(whole)} of {len(self.run)} code cells whole ({', '.join(whole)})"
                + (f", the imports of {', '.join(imports)}" if imports else ""))


def choose(sources: list[str]) -> Choice:
    """For a chapter's code cells in order, which to run whole, which for their imports only."""
    cells = [read_cell(s) for s in sources]
    modules = {}                                     # every name any cell binds by an import: its module
    for c in cells:
        modules.update(c.modules)
    builtin = set(dir(builtins))
    run, why = ["none"] * len(cells), [""] * len(cells)
    widget_names = set()
    for i, c in enumerate(cells):
        if c.unreadable:                             # its names are still read, where it parses
            run[i], why[i] = "whole", f"cannot be read safely: {c.unreadable}"
        widget_names |= {n for n, m in c.modules.items() if _makes_widgets(m)}
        shows = c.uses & widget_names
        if "netlab.ui" in c.attributes:
            shows.add("netlab.ui")
        if shows and not c.unreadable:
            run[i], why[i] = "whole", "shows a widget: uses " + ", ".join(sorted(shows))
        for bound, read in c.assigns:                # panel = ch2.CollectivePanel(...): panel is one too
            if read & widget_names:
                widget_names |= bound
    todo = [i for i, r in enumerate(run) if r == "whole"]
    while todo:
        i = todo.pop()
        for j in range(i):
            if run[j] == "whole":
                continue
            c = cells[j]
            # a name module-bound (netlab, np) and only called on is a module's function, not a change
            changed = {n for n in c.changes if n not in modules or n in c.defines - set(c.modules)}
            hit = sorted((cells[i].uses - builtin) & (c.defines | changed)) or \
                sorted(cells[i].uses & c.defines & builtin)
            if hit:
                run[j], why[j] = "whole", f"defines or changes {', '.join(hit)}, which cell {i} uses"
                todo.append(j)
    for j, c in enumerate(cells):
        if run[j] == "none" and c.imports:
            run[j], why[j] = "imports", "its imports only"
    return Choice(run, why)


def widget_copy(notebook: dict) -> tuple[dict, Choice]:
    """A copy of a notebook (its JSON) holding the cells its widgets need (see the module's docstring):
    markdown cells as they are, code cells whole, reduced to their imports or left out; no outputs."""
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    choice = choose(["".join(c["source"]) for c in code])
    kept, k = [], 0
    for c in notebook["cells"]:
        if c["cell_type"] != "code":
            kept.append(c)
            continue
        run = choice.run[k]
        k += 1
        if run == "none":
            continue
        c = dict(c, outputs=[], execution_count=None)
        if run == "imports":
            c["source"] = LEFT_OUT + "".join(read_cell("".join(c["source"])).imports)
        kept.append(c)
    return dict(notebook, cells=kept), choice


def write_widget_copy(path, to) -> Choice:
    """The widget copy of the notebook at `path`, written to `to`; returns what was chosen."""
    copy, choice = widget_copy(json.loads(path.read_text()))
    to.write_text(json.dumps(copy, indent=1) + "\n")
    return choice
