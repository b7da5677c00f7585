"""Exercise 2: the student's ring all-reduce, run on real ranks and held to three standards.

1. Right answer: every rank's result equals torch's own ``dist.all_reduce`` of the same data.
2. A ring's traffic: each rank sends exactly 2(p-1) messages.
3. A ring's cost: its virtual time equals the formula 2(p-1) alpha + 2(p-1)/p n/B within 1 %.
A deadlock is caught by a short timeout and reported with what each rank was waiting for.
"""
from __future__ import annotations

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from . import CheckResult
from .. import cluster, cost, seeds
from ..net.network import network

CASES = [(2, 1000), (3, 7), (4, 4099), (5, 3), (6, 65536)]    # (ranks, elements): uneven, tiny, larger
NET = ("10Gbit/s", "5us")


def _trial(comm, fn, n, seed):
    g = seeds.torch_generator(seed, seeds.CHECK, comm.rank)
    x = torch.randint(-100, 101, (n,), generator=g).float()       # integers: exact sums in any order
    expected = x.clone()
    dist.all_reduce(expected, group=comm.group)
    returned = fn(comm, x)
    got = returned if isinstance(returned, torch.Tensor) else x
    wrong = (got.reshape(-1) != expected).nonzero()
    if got.numel() != n:
        return f"returned {got.numel()} elements, expected {n}"
    if wrong.numel():
        i = int(wrong[0])
        return f"element {i} is {got.reshape(-1)[i].item():g}, the sum is {expected[i].item():g}"
    return None


def ring_allreduce(fn=None, cases=CASES, timeout: float = 20.0) -> CheckResult:
    """Run `fn(comm, x)` (default: netlab/exercises/ch2_ring.py) on real ranks and judge it."""
    if fn is None:
        from ..exercises.ch2_ring import ring_allreduce as fn
    name = "Exercise 2 (ring all-reduce)"
    net = network(*NET)
    rows, passed = [], True
    for p, n in cases:
        try:
            res = cluster.run(_trial, fn, n, 7 * p, ranks=p, network=net, timeout=timeout)
        except cluster.RankTimeout as exc:
            waits = "; ".join(line.strip() for line in str(exc).splitlines()[1:])
            return CheckResult(name, False, f"{p} ranks did not finish in {timeout:g} s -- a deadlock? {waits}. "
                               "Hint: comm.send waits for the receiver; in a ring use comm.sendrecv.", rows)
        except cluster.RankError as exc:
            if exc.exc_type == "NotImplementedError":
                return CheckResult(name, False, f"not implemented yet ({exc.remote_message})", rows)
            return CheckResult(name, False, f"on {p} ranks, rank {exc.rank} raised {exc.exc_type}: "
                               f"{exc.remote_message}", rows)
        problems = [(r, v) for r, v in enumerate(res.values) if v]
        sends = [len(res.trace.of(r, "send")) for r in range(p)]
        measured, formula = res.trace.makespan, cost.ring_allreduce(p, 4 * n, net.nic)
        error = abs(measured - formula) / formula
        row = {"ranks": p, "elements": n, "sum": "ok" if not problems else f"rank {problems[0][0]}: {problems[0][1]}",
               "messages/rank": "/".join(map(str, sorted(set(sends)))), "expected": 2 * (p - 1),
               "time_us": f"{measured * 1e6:.2f}", "formula_us": f"{formula * 1e6:.2f}", "error": f"{error:.1%}"}
        ok = not problems and set(sends) == {2 * (p - 1)} and error <= 0.01
        row["ok"] = "yes" if ok else "no"
        rows.append(row)
        passed &= ok
    if passed:
        return CheckResult(name, True, "correct sums, 2(p-1) messages per rank, and the ring's cost", rows)
    bad = next(r for r in rows if r["ok"] == "no")
    p = bad["ranks"]
    if bad["messages/rank"] == str(p - 1) and bad["sum"] != "ok":
        why = (f"half the messages ({p - 1} per rank on {p} ranks, a ring sends {2 * (p - 1)}): the all-gather "
               f"phase is missing; after the reduce-scatter each rank holds only one chunk of the sum "
               f"({bad['sum']})")
    elif bad["sum"] != "ok":
        why = (f"wrong result on {p} ranks: {bad['sum']}; check which chunk each step sends and which it adds "
               f"into (step s: send chunk (r - s) mod p, receive and add chunk (r - s - 1) mod p)")
    elif bad["messages/rank"] != str(bad["expected"]):
        why = f"on {p} ranks a rank sent {bad['messages/rank']} messages; a ring sends {bad['expected']}"
        if bad["messages/rank"] == str(p - 1):
            why += (": right sums from p - 1 messages means each carried a whole vector (n bytes, not n/p), "
                    "so every rank sends (p - 1) n bytes instead of 2(p - 1)/p n")
    else:
        why = f"right sums but {bad['error']} off the ring's cost on {bad['ranks']} ranks: too many bytes per message?"
    return CheckResult(name, False, why, rows)
