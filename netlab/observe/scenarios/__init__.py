"""Find the bottleneck: prepared scenarios that run on real ranks, each with a hidden culprit.

    from netlab.observe import scenarios
    out = scenarios.draw(seed)               # picks a scenario and its culprit from the seed, runs it
    out.trace, out.setup                     # what the student sees: a trace and the public setup
    out.truth                                # what the grader knows: {"kind": "slow_link", "rank": 2, ...}

Every scenario is a real run (``netlab.run`` on gloo ranks over an emulated network, virtual
time), never a canned trace. The kinds and their culprits:

* ``slow_link``: one rank's NIC at a fraction of the others' bandwidth (``links.slow_nic``), in a
  data-parallel step or a parameter-server run -- culprit: that rank;
* ``straggler``: one rank computes ``factor`` times longer (``overlap.overlapped_step``'s
  slowdown) -- culprit: that rank;
* ``hot_shard``: sparse embedding rows on parameter servers with Zipf-skewed lookups; the popular
  key range lives on one server (``ps.sparse``) -- culprit: that server's rank;
* ``spine``: the ranks sit on two leaves whose uplinks are oversubscribed (``links.spine``) --
  culprit: which ranks share a leaf;
* ``small_bucket``: DDP-style buckets so small that each all-reduce pays its latency 2(p-1) alpha
  for little data -- culprit: the bucket size (no rank);
* ``pfc_storm``: the all-reduce step on one switch with PFC (``netlab.cosim.live``, ideal transport,
  lossless); one host's NIC pauses the switch port toward it 60-80 % of every 200 us
  (``netlab.fabric.storm``, Guo et al., SIGCOMM 2016): that port's queue fills, the switch pauses
  the port of the rank that feeds it, and the whole ring waits -- culprit: the pausing host's rank
  (``analysis.pauses``: its switch port is the one paused by a host; the others are paused by the switch).

Seeds: ``plan(name, seed)`` derives the culprit and its strength from ``numpy.random.SeedSequence``
([seed, scenario]), ``pick(seed)`` the scenario from SeedSequence(seed); both are pure, so a
grader knows the truth without running anything. ``seed_of(text)`` turns a student's name or ID
into a seed (SHA-256, stable across machines and Python runs, unlike ``hash``).

Left out: culprits that combine, and a storm across several switches (the live fabric has one; a
storm there spreads one hop, to the hosts that send to the stalled one).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ... import validate
from .nominal import BIG_BUCKET, NETWORK, PS_LAYOUT, RANKS, SHAPE, STORM_BUFFER, STORM_PERIOD, storm_network

KINDS = ("slow_link", "straggler", "hot_shard", "spine", "small_bucket", "pfc_storm")


@dataclass(frozen=True)
class Plan:
    """A scenario before it runs: what the student is told (`setup`) and what is hidden (`truth`)."""
    name: str
    seed: int
    setup: dict
    truth: dict
    knobs: dict = field(default_factory=dict)      # how the culprit is built (hidden too)


@dataclass
class ScenarioRun:
    """A scenario after it ran: its trace, the public setup and the hidden truth."""
    plan: Plan
    trace: object = field(repr=False)

    @property
    def setup(self) -> dict:
        return self.plan.setup

    @property
    def truth(self) -> dict:
        return self.plan.truth


def check_seed(seed) -> int:
    """A seed: a whole number from 0 to 2**32 - 1, or a text (a name or a student ID) hashed into one."""
    if isinstance(seed, str):
        return seed_of(seed)
    return validate.whole(seed, "seed", 0, validate.SEED_MAX, int_only=True)


def seed_of(text: str) -> int:
    """A stable seed from a student's name or ID: the first 4 bytes of its SHA-256."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"seed: a name or ID must be non-empty text, got {text!r}")
    return int.from_bytes(hashlib.sha256(text.strip().encode()).digest()[:4], "big")


def _rng(seed: int, name: str | None = None) -> np.random.Generator:
    entropy = [seed] if name is None else [seed, KINDS.index(name) + 1]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def pick(seed) -> str:
    """The scenario a seed draws."""
    return KINDS[int(_rng(check_seed(seed)).integers(len(KINDS)))]


def _setup(workload: str) -> dict:
    from ...net.network import network
    net = network(*NETWORK)
    base = {"bandwidth_Bps": net.nic.bandwidth, "latency_s": net.nic.latency, "network": net.describe()}
    if workload == "allreduce":
        return {"workload": "allreduce", "ranks": RANKS, "ring": list(range(RANKS)), **SHAPE,
                "what": f"one data-parallel step on {RANKS} ranks, gradients ring all-reduced in DDP buckets "
                        f"during the backward pass", **base}
    w, k = PS_LAYOUT
    return {"workload": "ps", "ranks": w + k, "workers": list(range(w)), "servers": list(range(w, w + k)),
            "what": f"sparse embedding training: {w} workers (ranks 0-{w - 1}) pull and push rows of "
                    f"{k} parameter servers (ranks {w}-{w + k - 1}), 2 steps", **base}


def plan(name: str, seed=0) -> Plan:
    """The scenario `name` with the culprit `seed` draws (nothing runs)."""
    validate.choice(name, "name", KINDS)
    seed = check_seed(seed)
    rng = _rng(seed, name)
    if name == "slow_link":
        workload = ("allreduce", "ps")[int(rng.integers(2))]
        setup = _setup(workload)
        rank = int(rng.integers(setup["ranks"]))
        fraction = float(rng.choice([0.1, 0.15, 0.2]))
        return Plan(name=name, seed=seed, setup=setup, truth={"kind": name, "rank": rank},
                    knobs={"fraction": fraction, "bucket_bytes": BIG_BUCKET})
    if name == "straggler":
        rank, factor = int(rng.integers(RANKS)), float(rng.choice([1.5, 2.0, 2.5, 3.0]))
        return Plan(name=name, seed=seed, setup=_setup("allreduce"), truth={"kind": name, "rank": rank},
                    knobs={"slowdown": factor, "bucket_bytes": BIG_BUCKET})
    if name == "hot_shard":
        setup = _setup("ps")
        server = int(rng.integers(PS_LAYOUT[1]))
        return Plan(name=name, seed=seed, setup=setup, truth={"kind": name, "rank": setup["servers"][server]},
                    knobs={"server": server, "zipf": float(rng.choice([0.9, 1.0, 1.1]))})
    if name == "spine":
        leaf = [int(x) for x in rng.permutation([0] * (RANKS // 2) + [1] * (RANKS - RANKS // 2))]  # two leaves
        one = sorted(r for r in range(RANKS) if leaf[r] == leaf[0])
        return Plan(name=name, seed=seed, setup=_setup("allreduce"),
                    truth={"kind": name, "leaf": one, "other": sorted(set(range(RANKS)) - set(one))},
                    knobs={"leaf": leaf, "ratio": float(rng.choice([4, 6, 8])), "bucket_bytes": BIG_BUCKET})
    if name == "pfc_storm":
        setup = _setup("allreduce")
        setup["network"] = storm_network().describe()
        setup["what"] += "; the NICs share one switch with PFC (lossless)"
        rank, fraction = int(rng.integers(RANKS)), float(rng.choice([0.6, 0.7, 0.8]))
        return Plan(name=name, seed=seed, setup=setup, truth={"kind": name, "rank": rank},
                    knobs={"fraction": fraction, "period": STORM_PERIOD, "bucket_bytes": BIG_BUCKET})
    cap = int(rng.choice([1, 1_000, 4_000]))
    return Plan(name=name, seed=seed, setup=_setup("allreduce"), truth={"kind": name}, knobs={"bucket_bytes": cap})


def scenario(name: str, seed=0, timeout: float = 120.0) -> ScenarioRun:
    """Run the scenario `name` with the culprit `seed` draws, on real ranks."""
    from .runs import run
    p = plan(name, seed)
    return ScenarioRun(p, run(p, validate.positive(timeout, "timeout")))


def draw(seed=0, timeout: float = 120.0) -> ScenarioRun:
    """Pick a scenario and its culprit from `seed` (a number, or a name/ID text) and run it."""
    seed = check_seed(seed)
    return scenario(pick(seed), seed, timeout)
