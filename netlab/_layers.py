"""The layers of netlab, bottom first: a module may import its own layer and the layers below, never above.

Read by ``tests/test_layers.py`` (which parses every import of every module, function-local ones
included, and names each one that goes up) and drawn, in the same words, on ``docs/architecture.md``
(the test checks that the page's drawing is ``drawing()``, so the page cannot drift from the code).
An entry is a path under ``netlab/``: a folder (``fabric/``, every module below it), a file
(``dataparallel/step.py``), or a package's ``__init__.py`` alone. A module's layer is its most
specific entry: the file, else its nearest folder.
"""
from __future__ import annotations

# (layer, what it is, its entries). Bottom first.
LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("floor", "parsing, the one set of checks, random streams, the digits, torch on first use",
     ("units.py", "validate.py", "seeds.py", "data.py", "lazy.py", "_layers.py")),
    ("models", "the network and the algorithms on it, run by nothing but themselves: links, ports, "
               "topologies, routing; the collectives' schedules and their alpha-beta cost; the "
               "flow-level simulator; the packet fabric, its transports and its own experiments",
     ("net/", "collectives/", "sim/", "fabric/")),
    ("runtime", "where ranks run: gloo processes and their clocks, the simulated fabric that times "
                "their messages, namespaces on the kernel's TCP, a run's trace read back",
     ("runtime/", "cosim/live.py", "cosim/protocol.py", "cosim/state.py", "cosim/driver.py", "cosim/flows.py",
      "linuxnet/netns.py", "observe/analysis.py", "observe/hta_export.py")),
    ("mechanisms", "rank code: the training loop and its syncs, buckets, overlap, ZeRO, parameter "
                   "servers, compression, model parallelism, a rank as the aggregating switch",
     ("dataparallel/", "collectives/zero.py", "ps/", "compress/", "codesign/ina.py", "codesign/parallel/")),
    ("experiments", "one function per lesson, returning numbers, beside its mechanism; every figure",
     ("dataparallel/step.py", "dataparallel/bucket_sweep.py", "collectives/bench.py",
      "collectives/experiments.py", "ps/__init__.py", "ps/experiment.py", "ps/baseline.py", "ps/elastic.py",
      "compress/training.py", "compress/table.py", "compress/pays.py", "sim/compare.py", "cosim/", "codesign/",
      "codesign/parallel/__init__.py", "codesign/parallel/experiment.py", "observe/",
      "linuxnet/", "figures/")),
    ("lessons", "what a student touches: panels, exercises and their checks, the command line, "
                "graded variants, the challenge",
     ("ui/", "check/", "exercises/", "cli/", "assignment/", "challenge/")),
    ("package", "netlab's front door, and what the fork server loads once for every rank",
     ("__init__.py", "__main__.py", "runtime/preload.py")),
)


def _root():
    import pathlib
    return pathlib.Path(__file__).resolve().parent


def _path(module: str) -> tuple[str, ...]:
    """``netlab.fabric.tcp`` -> ('fabric', 'tcp.py'); a package -> (..., '__init__.py')."""
    root = _root()
    parts = module.split(".")[1:]
    if (root.joinpath(*parts)).is_dir():
        return tuple(parts) + ("__init__.py",)
    return tuple(parts[:-1]) + (parts[-1] + ".py",)


def layer_of(module: str) -> int:
    """The index in LAYERS of a dotted module name (``netlab.fabric.tcp``); KeyError if no entry covers it."""
    path = _path(module)
    best, depth = None, -1
    for i, (_, _, entries) in enumerate(LAYERS):
        for entry in entries:
            if entry.endswith("/"):
                folder = tuple(entry.rstrip("/").split("/"))
                hit, size = path[:len(folder)] == folder, len(folder)
            else:
                hit, size = path == tuple(entry.split("/")), len(path) + 1
            if hit and size > depth:
                best, depth = i, size
    if best is None:
        raise KeyError(f"{module}: no entry of netlab/_layers.py covers it")
    return best


def drawing() -> str:
    """The layers as docs/architecture.md draws them: top first, a layer's name and what it is, then its entries."""
    lines = []
    for i, (name, what, entries) in enumerate(reversed(LAYERS)):
        if i:
            lines.append("      |")
        import textwrap
        lines.extend(textwrap.wrap(f"{name}: {what}", 100, subsequent_indent="  "))
        line = "   "
        for entry in entries:
            if len(line) + len(entry) + 1 > 100:
                lines.append(line.rstrip())
                line = "   "
            line += " " + entry
        lines.append(line.rstrip())
    return "\n".join(lines)
