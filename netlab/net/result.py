"""What a simulated run returns, whichever model ran it: ``SimResult``.

A run has two result types in netlab. Real ranks return ``runtime.result.RunResult`` (their values,
trace, counters, ``wall_s``, ``fabric``). Every simulated run returns a ``SimResult``: the flow-level
simulator (``sim/``, chapter 5), the packet fabric (``fabric/``, chapters 6 and 9) and DCQCN's fluid
model (``fabric/fluid.py``). Its own fields are what every model reports, under one name each, and the
same name as ``RunResult``'s where they mean the same:

    model       'flow', 'packet' or 'fluid': which model ran
    time_s      the simulated seconds the run took: the sum of its steps (a collective's schedule, an
                incast's rounds); inf when it stopped before they all finished; without steps (long
                flows, the victim, the fluid model) the seconds it ran for. ``RunResult.time_s``: the
                same on the ranks' clocks
    step_times  (steps,) seconds, each step's (a collective's step, an incast's round); empty without
    wall_s      the seconds the simulation took on this machine (``RunResult.wall_s``)
    topology    the ``net.topology.Topology`` it ran on (the packet fabric's chapter 6 star and victim
                too); None for the fluid model's one bottleneck
    complete    False when it stopped at its event limit before its steps finished
    fabric      what the switches counted (drops, marks, pause_s, timeouts, retransmissions; chapter 9's
                runs also trims, NACKs, ...), as ``RunResult.fabric`` for real ranks on a congestion
                fabric; None for models without packets

What only one model observes is its ``detail``, and reads through: ``r.busbw_GBps`` is
``r.detail.busbw_GBps``. The details live beside their models:

    ``sim.simulator.FlowDetail``    a collective's run: collective, algo, ranks, nbytes, link_bytes,
                                    utilization, bottleneck (a link's label), busbw_GBps, ...
    ``sim.ina.InaDetail``           an in-network all-reduce on the flow model: the aggregating switch,
                                    each worker's rates up and down, busbw_GBps
    ``fabric.experiments.PacketDetail``  the packet fabric's: engine (the ``Fabric``, its ports and
                                    their traces), flows, network, bottleneck (a port's name), queue(), ...
    ``fabric.fluid.FluidDetail``    sample times t, queue(), rates, capacity, packet, window()

One type with a detail, not a class per model: the fields a reader compares across models (a duration,
the steps, the wall time, the counters) cannot drift apart, and a model's own observations stay with the
code that makes them. Left out: reading through for assignment (set a detail's fields on the detail).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import validate
from .topology import Topology

MODELS = ("flow", "packet", "fluid")


@dataclass(kw_only=True, eq=False)
class SimResult:
    """A simulated run: the fields every model has (the module's docstring), and its model's ``detail``."""
    model: str
    time_s: float
    step_times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    wall_s: float = 0.0
    topology: Topology | None = None
    complete: bool = True
    fabric: dict | None = None
    detail: object = None

    def __post_init__(self):
        validate.choice(self.model, "model", MODELS)
        self.step_times = np.asarray(self.step_times, dtype=float)
        if self.detail is not None:
            self.detail.result = self                 # its properties may need the run's time or topology

    def __getattr__(self, name: str):
        detail = self.__dict__.get("detail")         # (not self.detail: unpickling asks before it is set)
        if detail is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        try:
            return getattr(detail, name)
        except AttributeError:
            raise AttributeError(f"a {self.model} SimResult has no attribute {name!r} (nor has its "
                                 f"{type(detail).__name__})") from None

    def summary(self) -> dict:
        """The figures its model's command line prints (``detail.summary()``)."""
        return self.detail.summary()

    def __repr__(self) -> str:
        steps = len(self.step_times)
        return (f"SimResult({self.model}: {self.time_s:.6g} s simulated in {steps} step{'' if steps == 1 else 's'}, "
                f"{self.wall_s:.3g} s of wall time{'' if self.complete else ', incomplete'})")
