"""Configuration as objects (issue 28), in the packages of the training mechanisms: no public function
takes more than 4 positional parameters (self and cls aside), and one that takes more than 8 in all
takes a config object (``FitConfig``, ``StepConfig``, ...) or is listed here, keyword-only, with why.

Read from the source with ``ast``, so a new function that breaks the rule fails here by name.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "netlab"
FOLDERS = ("dataparallel", "ps", "compress", "codesign")

# More than 8 parameters, every one past the 4th keyword-only: simple options rather than a chapter's knobs.
KEYWORD_ONLY = {
    "compress/powersgd.py:PowerSGD.__init__": "torch's PowerSGDState takes the same keywords; compress.make builds it",
}


def signatures():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node, owner in _functions(tree):
                name = f"{owner}.{node.name}" if owner else node.name
                public = not node.name.startswith("_") or node.name == "__init__"
                if owner and owner.startswith("_") or not public:
                    continue
                args = node.args
                positional = args.posonlyargs + args.args
                if owner and positional and positional[0].arg in ("self", "cls"):
                    positional = positional[1:]
                yield f"{path.relative_to(ROOT)}:{name}", len(positional), len(positional) + len(args.kwonlyargs)


def _functions(tree):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node, None
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield item, node.name


ALL = list(signatures())


def test_the_packages_have_functions_to_check():
    assert len(ALL) > 100 and any(name.endswith("train.py:fit") for name, _, _ in ALL)


def test_no_positional_chain_longer_than_4_and_no_more_than_8_loose_parameters():
    chains = [f"{name} ({positional})" for name, positional, _ in ALL if positional > 4]
    loose = [f"{name} ({total})" for name, _, total in ALL if total > 8 and name not in KEYWORD_ONLY]
    assert not chains, f"more than 4 positional parameters, put '*' after the 4th: {', '.join(chains)}"
    assert not loose, f"more than 8 parameters, group them in a config: {', '.join(loose)}"


def test_every_exception_is_still_one():
    totals = {name: total for name, _, total in ALL}
    assert all(totals.get(name, 0) > 8 for name in KEYWORD_ONLY), "an exception that no longer needs listing"
