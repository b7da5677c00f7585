"""One name, one thing (issue 28): no two public classes of netlab/ share a name, and two modules share a
stem only where ``ALLOWED`` says why.

Read with ``ast`` from the files (nothing is imported). A public class is a class whose name has no leading
underscore, defined at a module's top level (an ``if`` or ``try`` there included), in any module, private
ones too. A module's stem is its file name without ``.py``, a package's its folder name (``ps/``); the
``__init__``/``__main__`` files themselves are not modules of their own here. Two modules may share a stem
when they are the same subject in another layer (``figures/ps.py`` draws ``ps/``, ``cli/sim.py`` is the
command line of ``sim/``, ``check/ch3.py`` and ``ui/ch3.py`` are chapter 3's checker and panel), or when
the name is a role that each mechanism folder has (``experiments.py``, ``config.py``): each such group is
an entry of ``ALLOWED``, all of its paths and a reason. A new module with an allowed stem fails until its
entry names it, and an entry that no longer matches the tree fails too, so the list cannot go stale.
"""
from __future__ import annotations

import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "netlab"

# stem -> (every path under netlab/ that has it, why they may share it)
ALLOWED: dict[str, tuple[tuple[str, ...], str]] = {
    # the same subject at another layer: a chapter's checker, panel and command
    **{f"ch{n}": ((f"check/ch{n}.py", f"ui/ch{n}.py"), f"chapter {n}'s exercise checker and its widget panel")
       for n in range(1, 9)},
    "ch9": (("check/ch9.py", "cli/congestion/ch9.py", "ui/ch9.py"),
            "chapter 9's exercise checker, its fabric on `netlab congestion incast`, and its widget panel"),
    # the same subject at another layer: a mechanism, its figures, its command line
    "assignment": (("assignment/", "cli/assignment.py"), "the graded variants and `netlab assignment`, their command"),
    "bench": (("cli/bench.py", "collectives/bench.py"), "the nccl-tests-style bench and `netlab bench`, its command"),
    "capstone": (("codesign/capstone.py", "figures/capstone.py"), "chapter 8's capstone predictor and its figure"),
    "challenge": (("challenge/", "cli/challenge.py", "figures/challenge.py"),
                  "the chapter 8 challenge, `netlab challenge`, and its per-link figure"),
    "codesign": (("codesign/", "figures/codesign.py"), "chapter 8's co-design and its figures"),
    "collectives": (("collectives/", "figures/collectives.py"), "chapter 2's collectives and their figures"),
    "compress": (("cli/compress.py", "compress/", "figures/compress.py"),
                 "chapter 4's gradient compression, `netlab compress`, and its figures"),
    "congestion": (("cli/congestion/", "fabric/congestion.py", "figures/congestion.py"),
                   "chapter 6's congestion: `netlab congestion`, the congested switch real ranks run on "
                   "(`Congestion`), and its figures"),
    "ethernet": (("fabric/ethernet.py", "figures/ethernet.py"),
                 "chapter 9's Ethernet-for-AI experiments and their figures"),
    "grade": (("assignment/grade.py", "cli/grade.py"),
              "grading a folder of submissions and `netlab grade`, its command"),
    "parallel": (("cli/parallel.py", "codesign/parallel/", "figures/parallel.py"),
                 "model parallelism (tensor, pipeline), `netlab parallel`, and its figure"),
    "ps": (("cli/ps.py", "figures/ps.py", "ps/"), "chapter 3's parameter servers, `netlab ps`, and their figures"),
    "sim": (("cli/sim.py", "sim/"), "the flow-level simulator and `netlab sim`, its command"),
    "step": (("cli/step.py", "dataparallel/step.py", "figures/step.py"),
             "chapter 1's data-parallel step, `netlab step`, and its figures"),
    "topology": (("figures/topology.py", "net/topology.py"), "a cluster's topology and its drawing (chapter 5)"),
    "trace": (("figures/trace.py", "runtime/trace.py"), "a run's trace and chapter 7's figures drawn from it"),
    "result": (("net/result.py", "runtime/result.py"),
               "the same subject for the two kinds of run: what a simulated run returns (`SimResult`) and what "
               "real ranks return (`RunResult`), with the field names they share"),
    # the same algorithm at another scale or in another form
    "alltoall": (("collectives/alltoall.py", "sim/alltoall.py"),
                 "the same all-to-all: on real ranks, and on thousands of simulated ones"),
    "ina": (("codesign/ina.py", "sim/ina.py"),
            "the same in-network aggregation: on real ranks, and in the flow-level simulator at scale"),
    "ring": (("challenge/baselines/allreduce_16m/ring.py", "challenge/baselines/allreduce_4k/ring.py",
              "collectives/ring.py"),
             "the ring all-reduce, and the challenge's baseline entry that is the ring, one per task"),
    "hierarchical": (("challenge/baselines/allreduce_16m/hierarchical.py",
                      "challenge/baselines/allreduce_4k/hierarchical.py", "collectives/hierarchical.py"),
                     "the hierarchical all-reduce, and the challenge's baseline entry that runs it, one per task"),
    "best": (("challenge/baselines/allreduce_16m/best.py", "challenge/baselines/allreduce_4k/best.py"),
             "the same role, the best baseline entry, in each challenge task's folder of baselines"),
    # a role every mechanism folder has (_layers.py: "one function per lesson ... beside its mechanism")
    "experiments": (("collectives/experiments.py", "cosim/experiments.py", "fabric/experiments.py",
                     "sim/experiments.py"),
                    "a role: the chapter's experiments, beside the mechanism they run (real ranks, ranks on the "
                    "fabric, the packet fabric, the flow simulator)"),
    "experiment": (("codesign/parallel/experiment.py", "ps/experiment.py"),
                   "a role: the one run a chapter's widgets and command call, beside its mechanism "
                   "(model parallelism, parameter servers)"),
    "config": (("compress/config.py", "ps/config.py"),
               "a role: the frozen, self-checking configuration one run of that mechanism's ranks receive"),
    "training": (("compress/training.py", "ps/training.py"),
                 "a role: chapter 1's training loop on real ranks with that mechanism's gradient exchange"),
    "_child": (("assignment/_child.py", "challenge/_child.py"),
               "private, a role: the subprocess `assignment.sandbox.run_child` starts, in each of the two graders; "
               "each is named by string only by its own package (`sandbox.run_answer`, `board`)"),
}


def modules(root: pathlib.Path) -> dict[str, list[str]]:
    """stem -> the paths relative to `root` of the modules (``ps/worker.py``) and packages (``ps/``) with it."""
    out: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root)
        if path.name == "__init__.py":
            if path.parent != root:
                out[path.parent.name].append(rel.parent.as_posix() + "/")
        elif not (path.stem.startswith("__") and path.stem.endswith("__")):
            out[path.stem].append(rel.as_posix())
    return {stem: sorted(where) for stem, where in out.items()}


def _top_level(body):
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
            for h in getattr(node, "handlers", []):
                yield from _top_level(h.body)
            yield from _top_level(getattr(node, "finalbody", []))


def public_classes(root: pathlib.Path) -> dict[str, list[str]]:
    """name -> the modules (paths relative to `root`) that define a public top-level class of that name."""
    out: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _top_level(tree.body):
            if not node.name.startswith("_"):
                out[node.name].append(path.relative_to(root).as_posix())
    return dict(out)


def clashes(root: pathlib.Path, allowed: dict[str, tuple[tuple[str, ...], str]]) -> list[str]:
    """Every name that means two things under `root`, and every entry of `allowed` that no longer fits."""
    found = []
    for name, where in sorted(public_classes(root).items()):
        if len(where) > 1:
            found.append(f"class {name}: defined in {', '.join(where)}; give each a name that says what it is")
    stems = modules(root)
    for stem, where in sorted(stems.items()):
        if len(where) < 2:
            continue
        if stem not in allowed:
            found.append(f"module stem {stem!r}: {', '.join(where)}; rename the ones that are different things, "
                         f"or give the group an entry in ALLOWED with its reason")
        elif sorted(allowed[stem][0]) != where:
            found.append(f"module stem {stem!r}: {', '.join(where)}, but ALLOWED names "
                         f"{', '.join(sorted(allowed[stem][0]))}")
    for stem, (paths, why) in sorted(allowed.items()):
        if not why.strip():
            found.append(f"ALLOWED[{stem!r}] gives no reason")
        if len(stems.get(stem, [])) < 2:
            now = ", ".join(stems.get(stem, [])) or "no module"
            found.append(f"ALLOWED[{stem!r}] is stale: {now} has that stem now")
    return found


def test_every_name_says_one_thing():
    found = clashes(ROOT, ALLOWED)
    assert not found, "names that say two things (tests/test_names.py):\n" + "\n".join(found)


def _tree(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_finds_each_kind_of_clash(tmp_path):
    """On a toy tree: a shared class (one hidden under a top-level ``if``), a shared stem, a stem allowed for
    fewer paths than have it, and a stale entry are each named; a private class and ``__init__`` are not."""
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "class Top:\n    pass\n",
        "a/__init__.py": "class _Private:\n    pass\n",
        "a/engine.py": "class Result:\n    pass\n\n\ndef f():\n    class Inner:\n        pass\n",
        "b/__init__.py": "class _Private:\n    pass\n",
        "b/engine.py": "import sys\nif sys.version_info > (3,):\n    class Result:\n        pass\n",
        "b/ring.py": "class Inner:\n    pass\n",
        "c/__init__.py": "",
        "c/ring.py": "",
        "d/__init__.py": "",
        "d/ring.py": "",
    })
    allowed = {"ring": (("b/ring.py", "c/ring.py"), "the same ring"), "gone": (("a/gone.py", "b/gone.py"), "stale")}
    found = clashes(root, allowed)
    assert found[0].startswith("class Result: defined in a/engine.py, b/engine.py")
    assert found[1].startswith("module stem 'engine': a/engine.py, b/engine.py; rename")
    assert found[2] == "module stem 'ring': b/ring.py, c/ring.py, d/ring.py, but ALLOWED names b/ring.py, c/ring.py"
    assert found[3].startswith("ALLOWED['gone'] is stale")
    assert len(found) == 4, found


def test_the_checker_passes_a_clean_tree(tmp_path):
    """Same stems, each group allowed with its reason; a package and a module of one stem count as two."""
    root = _tree(tmp_path / "pkg", {
        "__init__.py": "", "__main__.py": "",
        "ps/__init__.py": "class Server:\n    pass\n", "cli/__init__.py": "", "cli/ps.py": "class Command:\n    pass\n",
    })
    assert modules(root) == {"ps": ["cli/ps.py", "ps/"], "cli": ["cli/"]}
    assert clashes(root, {"ps": (("ps/", "cli/ps.py"), "the command line of ps/")}) == []
    assert clashes(root, {}) == ["module stem 'ps': cli/ps.py, ps/; rename the ones that are different things, "
                                 "or give the group an entry in ALLOWED with its reason"]
