"""The lab's data: the 8x8 handwritten digits shipped in ``data/digits.npz`` (1,797 images, 10 classes).

The images are scikit-learn's ``load_digits`` copy of the UCI "Optical Recognition of Handwritten
Digits" test set (Alpaydin & Kaynak, 1998; CC BY 4.0), exported once so that nothing is
downloaded at run time. Pixels are 0..16; ``load`` scales them to 0..1.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
from netlab import validate
from netlab.lazy import lazy
torch = lazy("torch", globals())

_CANDIDATES = [Path(os.environ["NETLAB_DATA"]) if "NETLAB_DATA" in os.environ else None,
               Path(__file__).resolve().parents[1] / "data"]


def data_dir() -> Path:
    for path in _CANDIDATES:
        if path is not None and (path / "digits.npz").exists():
            return path
    raise FileNotFoundError("digits.npz not found: run from a clone of the netlab repository "
                            "(data/digits.npz) or set NETLAB_DATA to the folder holding it")


@functools.lru_cache(maxsize=1)
def _arrays():
    with np.load(data_dir() / "digits.npz") as f:
        return f["images"].reshape(-1, 64).astype(np.float32) / 16.0, f["labels"].astype(np.int64)


def size(split: str = "train", test_fraction: float = 0.2) -> int:
    """How many examples ``load(split, test_fraction)`` returns (without building tensors: no torch needed)."""
    validate.choice(split, "split", ("train", "test", "all"))
    n = len(_arrays()[1])
    n_test = int(round(n * test_fraction))
    return {"all": n, "test": n_test, "train": n - n_test}[split]


def load(split: str = "train", test_fraction: float = 0.2, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y) for 'train', 'test' or 'all': x (N, 64) float32 in [0, 1], y (N,) int64 in 0..9.

    The split is a fixed shuffle (same `seed` -> same split on every rank and every machine).
    """
    validate.choice(split, "split", ("train", "test", "all"))
    x, y = _arrays()
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    idx = {"all": order, "test": order[:n_test], "train": order[n_test:]}[split]
    return torch.from_numpy(x[idx]), torch.from_numpy(y[idx])
