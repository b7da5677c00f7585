"""A module (or one of its attributes) imported on first use, so the notebook kernel need not load torch.

The ranks need torch; the kernel that drives them mostly does not: it builds configurations, launches
runs, receives plain numbers and draws. ``import torch`` alone costs a process about 140 MB of
anonymous memory, and on Binder (2 GB for every open kernel together) that decides how many chapters
fit. So a module whose functions run on ranks writes ``torch = lazy("torch", globals())`` instead of
``import torch``: importing the module costs nothing, and the first attribute taken from ``torch``
imports it and rebinds the module's global to the real module, so later uses are plain global lookups.

``lazy("torch.utils.flop_counter:FlopCounterMode", globals())`` stands for one attribute of a module
(a class or a function): calling it, or taking an attribute of it, imports the module first.

Left out: anything torch needs at import time of the module that uses it (a class deriving from
``nn.Module``, a decorator, a default argument) still imports torch there; such modules stay rank-side
and the kernel-side modules import them inside the functions that need them.
"""
from __future__ import annotations

import importlib
import sys


class Lazy:
    """Stands for module ``name`` (``"pkg.mod"``) or an attribute of it (``"pkg.mod:attr"``) until first use."""

    __slots__ = ("_target", "_namespace")

    def __init__(self, target: str, namespace: dict | None = None):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_namespace", namespace)

    def _load(self):
        module, _, attr = self._target.partition(":")
        obj = importlib.import_module(module)
        if attr:
            obj = getattr(obj, attr)
        namespace = self._namespace
        if namespace is not None:                   # rebind the importing module's globals to the real thing
            for key, value in list(namespace.items()):
                if value is self:
                    namespace[key] = obj
        return obj

    def __getattr__(self, attr):
        return getattr(self._load(), attr)

    def __call__(self, *args, **kwargs):
        return self._load()(*args, **kwargs)

    def __setattr__(self, attr, value):
        setattr(self._load(), attr, value)

    def __repr__(self) -> str:
        loaded = self._target.partition(":")[0] in sys.modules
        return f"<lazy {self._target}{' (imported)' if loaded else ''}>"


def lazy(target: str, namespace: dict | None = None) -> Lazy:
    """``target`` (``"torch"``, ``"torch.nn.functional"``, ``"torch.nn.utils:parameters_to_vector"``),
    imported on first use; ``namespace`` (the caller's ``globals()``) is rebound to it then."""
    return Lazy(target, namespace)
