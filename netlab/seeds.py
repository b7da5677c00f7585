"""Every derived random stream in netlab comes from one rule: numpy's SeedSequence of (seed, stream, keys).

A run has one user-facing ``seed``. Where it needs many independent streams -- one per epoch's batch
order, per step's straggler draw, per rank's quantization noise, per (worker, step) of embedding
lookups -- each is ``SeedSequence([seed, STREAM, *keys])``: different streams and keys give
statistically independent generators. SeedSequence hashes its whole entropy; ad-hoc arithmetic makes
streams that can coincide (an access log drawn with ``seed + 10_000`` was the training lookups of a
run with seed 10_000).
The streams are named below so that two purposes never share one by accident.

Left out, on purpose: single streams seeded straight from ``seed`` (the data split, a topology's
shuffle, the packet fabric's ``random.Random``), which need no derivation; and PowerSGD's
``np.random.RandomState(seed)``, kept as PyTorch's own PowerSGD hook has it so that the two agree
(a test compares them).
"""
from __future__ import annotations

import random

import numpy as np
from netlab import validate
from netlab.lazy import lazy
torch = lazy("torch", globals())

# stream names: the second word of every derived seed
BATCHES = 1          # a training run's batch order, per epoch
STRAGGLERS = 2       # which worker straggles, per step (parameter servers)
SAMPLING = 3         # random-k's indices, per step (the same on every rank)
NOISE = 4            # a rank's stochastic rounding (QSGD, TernGrad), per rank
LOOKUPS = 5          # embedding rows a worker looks up, per (worker, step)
ACCESS_LOG = 6       # the access log hot rows are chosen from, per (worker, step)
CHECK = 7            # an exercise checker's inputs, per rank
BENCH = 8            # the bench's --check inputs, per rank
VARIANTS = 9         # an assignment's per-student variant, per chapter


def sequence(seed: int, stream: int, *keys: int) -> np.random.SeedSequence:
    for name, value in (("seed", seed), ("stream", stream), *((f"key {i}", k) for i, k in enumerate(keys))):
        validate.whole(value, name, 0, int_only=True)
    return np.random.SeedSequence([int(seed), int(stream), *map(int, keys)])


def derive(seed: int, stream: int, *keys: int) -> int:
    """A 63-bit integer seed for `stream` at `keys` (for APIs that take an int: torch, random)."""
    hi, lo = sequence(seed, stream, *keys).generate_state(2, np.uint32)
    return (int(hi) << 31) ^ int(lo)


def generator(seed: int, stream: int, *keys: int) -> np.random.Generator:
    """A numpy Generator for `stream` at `keys`."""
    return np.random.default_rng(sequence(seed, stream, *keys))


def torch_generator(seed: int, stream: int, *keys: int) -> torch.Generator:
    """A torch CPU Generator for `stream` at `keys`."""
    return torch.Generator().manual_seed(derive(seed, stream, *keys))


def python_random(seed: int, stream: int, *keys: int) -> random.Random:
    """A ``random.Random`` for `stream` at `keys`."""
    return random.Random(derive(seed, stream, *keys))
