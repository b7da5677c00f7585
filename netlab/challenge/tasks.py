"""The challenge's tasks: a fixed collective on a fixed cluster, lowest virtual time wins.

Both tasks run on one cluster, the shape of a small training pod: 4 servers of 8 accelerators
(NVLink3 between the accelerators of a server, each reaching the server's one 100 Gbit/s NIC over
PCIe 5.0), 2 servers per leaf switch, 2 leaves, 2 spines, leaf uplinks 2:1 oversubscribed (each
leaf's two 100 Gbit/s host ports share two 50 Gbit/s uplinks, one to each spine). 32 real ranks, one
per accelerator.

* ``allreduce-16m`` (bandwidth-bound): all-reduce 16 MiB of float32. Bytes dominate: what counts is
  how much crosses the shared NICs and the oversubscribed spine, and whether the flows that cross it
  use both spines (ECMP hashes each sender -> receiver pair onto one).
* ``allreduce-4k`` (latency-bound): all-reduce 4 KiB of float32. Alphas dominate: 5 us per message
  through a NIC, 2 us inside a server, and a NIC serves its 8 accelerators' alphas one after another.

Why 16 MiB and 32 ranks, not 64 MiB: every byte really moves between 32 processes on the grading
machine. 32 ranks x 16 MiB peak at about 2.3 GB of memory and take seconds per entry on two cores;
64 MiB would need about 8 GB. At 16 MiB the all-reduce is still bandwidth-bound on this fabric
(the alphas of a ring are under 6 % of its time), so the lesson is the same.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .. import validate


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    nbytes: int                       # bytes of float32 every rank holds and the all-reduce sums
    hosts: int = 4
    accelerators: int = 8             # per host, behind one NIC
    leaves: int = 2
    spines: int = 2
    ratio: float = 2.0                # leaf uplink oversubscription, ratio : 1
    nic: str = "100GbE"
    intra: str = "NVLink3"
    pcie: str = "PCIe5x16"
    routing: str = "ecmp"
    seed: int = 0                     # the ECMP hash's seed: part of the fabric, fixed
    rank_timeout_s: float = 120.0     # wall seconds the ranks get to finish (a deadlock is caught here)
    time_limit_s: float = 420.0       # wall seconds per entry in its sandbox, the pool's start included
    function: str = "allreduce"       # what an entry defines: allreduce(comm, x)

    def __post_init__(self):
        validate.whole(self.nbytes, "nbytes", 4, int_only=True)
        if self.nbytes % 4:
            raise ValueError(f"nbytes: whole float32 elements (a multiple of 4), got {self.nbytes}")
        validate.whole(self.hosts, "hosts", 1, int_only=True)
        validate.whole(self.accelerators, "accelerators", 1, int_only=True)
        validate.whole(self.leaves, "leaves", 1, int_only=True)
        if self.hosts % self.leaves:
            raise ValueError(f"leaves: must divide the hosts ({self.hosts}), got {self.leaves}")
        validate.whole(self.spines, "spines", 1, int_only=True)
        validate.positive(self.ratio, "ratio")

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def ranks(self) -> int:
        return self.hosts * self.accelerators

    @property
    def count(self) -> int:
        """float32 elements per rank."""
        return self.nbytes // 4

    # ---- the fabric ----------------------------------------------------------------------------
    def topology(self):
        from ..net import fabrics
        from ..net.topology import Host
        host = Host(self.accelerators, nics=1, intra=self.intra, pcie=self.pcie)
        return fabrics.spine_leaf(self.leaves, self.spines, self.ratio, self.hosts // self.leaves, nic=self.nic,
                                  host=host, hosts=self.hosts)

    def network(self):
        """The network real ranks run on: this task's spine-leaf as a flow-level fabric."""
        from ..cosim.flows import FlowFabric
        from ..net.network import network
        return network(preset=self.nic, ranks_per_host=self.accelerators, intra=self.intra,
                       congestion=FlowFabric(self.topology(), routing=self.routing, seed=self.seed, causal=True))

    def describe(self) -> str:
        from ..units import fmt_bytes
        return (f"{self.title}: all-reduce {fmt_bytes(self.nbytes)} of float32 across {self.ranks} ranks, "
                f"{self.hosts} servers of {self.accelerators} accelerators ({self.intra}), one {self.nic} NIC per "
                f"server (over {self.pcie}), {self.leaves} leaves x {self.spines} spines, uplinks "
                f"{self.ratio:g}:1 oversubscribed, {self.routing.upper()}")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(**d)

    def scaled(self, **changes) -> "Task":
        """The same task with some fields changed (a smaller cluster for a quick try, say); named apart."""
        t = replace(self, **changes)
        if t != self and "name" not in changes:
            t = replace(t, name=f"{self.name}@{t.hosts}x{t.accelerators}:{t.nbytes}")
        return t


TASKS = {
    "allreduce-16m": Task("allreduce-16m", "bandwidth-bound", 16 << 20),
    "allreduce-4k": Task("allreduce-4k", "latency-bound", 4 << 10),
}


def task(name) -> Task:
    """A task by name (or a Task, returned as is)."""
    if isinstance(name, Task):
        return name
    return TASKS[validate.choice(name, "challenge", TASKS)]
