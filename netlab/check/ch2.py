"""Exercise 2: the student's ring all-reduce, run on real ranks and held to three standards.

1. Right answer: every rank's result equals torch's own ``dist.all_reduce`` of the same data.
2. A ring's traffic: each rank sends exactly 2(p-1) messages.
3. A ring's cost: its virtual time equals the formula 2(p-1) alpha + 2(p-1)/p n/B within 1 %.
A deadlock is caught by a short timeout and reported with what each rank was waiting for. An
answer that calls netlab's collectives (``collectives.allreduce`` ...) or torch's (``dist.all_reduce``
...) fails saying so (``check.Guard`` on every rank): it is to be written from ``comm``'s
point-to-point calls.

A wrong sum is taken apart by phase. The inputs are integers drawn from a seed per rank, so each
rank can redraw every rank's input and say, for each of the p chunks of its result
(``x.tensor_split(p)``, the layout the exercise asks for), which ranks' data it holds and how many
times: after the reduce-scatter each rank must hold one complete chunk (every rank's data once), and
after the all-gather every chunk. The message says which phase left which chunk incomplete, or
added something twice, and what that chunk holds -- never the schedule of chunks to send.
"""
from __future__ import annotations

import itertools

from netlab.lazy import lazy
torch = lazy("torch", globals())
dist = lazy("torch.distributed", globals())

from . import CheckResult, Guard, OwnImplementation, _ring_probe, own_implementation
from ..collectives import cost
from .. import seeds
from ..runtime import errors, launch
from ..net.network import network

CASES = [(2, 1000), (3, 7), (4, 4099), (5, 3), (6, 65536)]    # (ranks, elements): uneven, tiny, larger
NET = ("10Gbit/s", "5us")
SAMPLES = 8                                                    # elements of a chunk read to name what it holds


def _inputs(n, seed, p):
    """Every rank's input (p x n): integers, so sums are exact in any order."""
    return torch.stack([torch.randint(-100, 101, (n,), generator=seeds.torch_generator(seed, seeds.CHECK, r)).float()
                        for r in range(p)])


def _holds(got, inputs) -> list:
    """For each chunk of `got` (tensor_split(p)): the tuple of how many times it holds each rank's data
    (0, 1 or 2 each), None if it is no such sum, or "empty" for an empty chunk."""
    p, n = inputs.shape
    combos = torch.tensor(list(itertools.product(range(3), repeat=p)), dtype=torch.float32)     # (3^p, p)
    out = []
    for chunk in torch.arange(n).tensor_split(p):
        if not chunk.numel():
            out.append("empty")
            continue
        idx = chunk[torch.linspace(0, chunk.numel() - 1, min(SAMPLES, chunk.numel())).long()]
        equal = combos @ inputs[:, idx] == got[idx]                                            # (3^p, samples)
        match = equal.all(dim=1).nonzero()
        if match.numel():
            out.append(tuple(int(c) for c in combos[int(match[0])]))
            continue
        each = []                       # no one sum fits the whole chunk: what each sampled element holds
        for j, i in enumerate(idx.tolist()):
            fits = equal[:, j].nonzero()
            each.append((i, tuple(int(c) for c in combos[int(fits[0])]) if fits.numel() else None))
        out.append(each)
    return out


def _trial(comm, fn, n, seed):
    p = comm.world_size
    inputs = _inputs(n, seed, p)
    x = inputs[comm.rank].clone()
    expected = x.clone()
    dist.all_reduce(expected, group=comm.group)
    box = _ring_probe.watch(comm, x, p - 1)              # x as the reduce-scatter leaves it
    try:
        returned = Guard(fn, allow=("runtime/", "check/_ring_probe.py"), torch_collectives=True)(comm, x)
    except OwnImplementation as exc:
        return {"own": str(exc)}
    finally:
        _ring_probe.finish(comm, box)
    got = returned if isinstance(returned, torch.Tensor) else x
    got = got.detach().reshape(-1).float()
    if got.numel() != n:
        return {"wrong": f"returned {got.numel()} elements, expected {n}"}
    wrong = (got != expected).nonzero()
    if not wrong.numel():
        return {}
    i = int(wrong[0])
    out = {"wrong": f"element {i} is {got[i].item():g}, the sum is {expected[i].item():g}",
           "holds": _holds(got, inputs)}
    if "snapshot" in box and p > 1:
        out["after_reduce_scatter"] = _holds(box["snapshot"], inputs)
    return out


def _steps(p) -> str:
    return f"{p - 1} step{'s' if p > 2 else ''}"


def _ranks(coeffs, times=1) -> str:
    chosen = [str(r) for r, c in enumerate(coeffs) if c == times]
    return "{" + ", ".join(chosen) + "}" if chosen else "none"


def explain_sums(p: int, n: int, values: list, sends: list) -> str:
    """Which phase left the sums wrong, from what each rank's chunks hold."""
    case = f"on {p} ranks with {n} elements"
    holds = {r: v["holds"] for r, v in enumerate(values) if v.get("holds")}
    full = tuple([1] * p)
    first = next(iter(holds))
    for r, chunks in holds.items():
        for k, c in enumerate(chunks):
            if isinstance(c, list):
                if any(e is None for _, e in c):
                    i = next(i for i, e in c if e is None)
                    return (f"{case}: rank {r}'s element {i} (in chunk {k}) holds a value that is no sum of the "
                            f"ranks' data ({values[r]['wrong']}): was a buffer read before its message arrived, "
                            "or a message received into the wrong place?")
                (i, a), (j, b) = next(((c[m], c[m + 1]) for m in range(len(c) - 1) if c[m][1] != c[m + 1][1]),
                                      (c[0], c[-1]))
                return (f"{case}: the elements of rank {r}'s chunk {k} (x.tensor_split({p})) hold different sums: "
                        f"element {i} the data of ranks {_ranks(a)}, element {j} of ranks {_ranks(b)}. Are the "
                        f"chunks the same on every rank, and do they cover all {n} elements?")
            if c != "empty" and max(c) > 1:
                return (f"{case}: rank {r}'s chunk {k} holds the data of rank(s) {_ranks(c, 2)} twice (and of "
                        f"{_ranks(c, 1)} once): something was added twice. Which arrivals are a part still to be "
                        "added, and which are a finished chunk that only has to be kept?")
    own = all(c in ("empty", tuple(int(q == r) for q in range(p))) for r, chunks in holds.items() for c in chunks)
    if own:
        return (f"{case}: every rank's x still holds only its own data, as if nothing arrived: did your chunks "
                "stop being views of x (a copy, or chunk = chunk + buf), or did you build the sum in a new tensor "
                "and not return it?")
    complete = {r: [k for k, c in enumerate(chunks) if c == full] for r, chunks in holds.items()}
    incomplete = [(r, k, c) for r, chunks in holds.items() for k, c in enumerate(chunks) if c not in (full, "empty")]
    if not incomplete:        # each chunk right where sampled, yet an element is wrong: report it plainly
        return f"{case}: wrong result on rank {first}: {values[first]['wrong']}"
    r, k, c = incomplete[0]
    after = {q: v.get("after_reduce_scatter") for q, v in enumerate(values)}
    if all(isinstance(a, list) for a in after.values()):          # x as each rank's reduce-scatter left it
        finished = {q: [j for j, h in enumerate(a) if h == full] for q, a in after.items()}
        if all(finished.values()) and set(sends) != {p - 1}:
            lost = next(((q, j) for q in holds for j in finished[q] if holds[q][j] != full), None)
            done = next(iter(finished))
            if lost is not None:
                q, j = lost
                return (f"{case}: the reduce-scatter worked (after its {_steps(p)} rank {q} held all {p} ranks' "
                        f"sum in chunk {j}), but the all-gather overwrote that finished chunk: at the end it holds "
                        f"the sum over ranks {_ranks(holds[q][j])} only. At each all-gather step, which finished "
                        "chunk does a rank pass on, and where does it keep the one it receives?")
            return (f"{case}: the reduce-scatter worked (after its {_steps(p)} rank {done} held all {p} ranks' sum "
                    f"in chunk {finished[done][0]}), but the all-gather did not bring every finished chunk to "
                    f"every rank: rank {r}'s chunk {k} holds the sum over ranks {_ranks(c)} only. At each "
                    "all-gather step, which finished chunk does a rank pass on, and where does it keep the one it "
                    "receives?")
        if not all(finished.values()):
            q = next(q for q in finished if not finished[q])
            best_j, best = max(((j, h) for j, h in enumerate(after[q]) if isinstance(h, tuple)),
                               key=lambda t: sum(t[1]), default=(0, None))
            held = f"its most complete, chunk {best_j}, sums ranks {_ranks(best)}" if best else "nothing summed"
            return (f"{case}: the reduce-scatter did not finish: after its {_steps(p)} rank {q} held no chunk with "
                    f"all {p} ranks' data ({held}). At each reduce-scatter step, which chunk does a rank send on, "
                    "and into which does it add what arrives?")
    if all(complete[q] for q in holds):
        done = next(q for q in holds if complete[q])
        if set(sends) == {p - 1}:
            return (f"{case}: half the messages ({p - 1} per rank; a ring sends {2 * (p - 1)}): the all-gather phase "
                    f"is missing. The reduce-scatter worked (rank {done} holds all {p} ranks' sum in chunk "
                    f"{complete[done][0]}), but rank {r}'s chunk {k} holds the sum over ranks {_ranks(c)} only")
        return (f"{case}: the reduce-scatter worked (every rank finished one chunk: rank {done} holds all {p} ranks' "
                f"sum in chunk {complete[done][0]}), but the all-gather did not bring every finished chunk to every "
                f"rank: rank {r}'s chunk {k} holds the sum over ranks {_ranks(c)} only. At each all-gather step, "
                "which finished chunk does a rank pass on, and where does it keep the one it receives?")
    if not any(complete.values()):
        best_r, best_k, best = max(incomplete, key=lambda t: sum(t[2]))
        return (f"{case}: the reduce-scatter finished no chunk anywhere. After it each rank should hold one chunk "
                f"with all {p} ranks' data; the most complete one here, rank {best_r}'s chunk {best_k}, sums ranks "
                f"{_ranks(best)}. At each reduce-scatter step, which chunk does a rank send on, and into which does "
                "it add what arrives?")
    lacking = next(q for q in holds if not complete[q])
    have = next(q for q in holds if complete[q])
    worst = max((t for t in incomplete if t[0] == lacking), key=lambda t: sum(t[2]))
    return (f"{case}: rank {lacking} holds no complete chunk (its most complete, chunk {worst[1]}, sums ranks "
            f"{_ranks(worst[2])}) while rank {have} holds one (chunk {complete[have][0]}): do all ranks run the same "
            "steps, each with its own neighbours?")


def ring_allreduce(fn=None, cases=CASES, timeout: float = 20.0) -> CheckResult:
    """Run `fn(comm, x)` (default: netlab/exercises/ch2_ring.py) on real ranks and judge it."""
    if fn is None:
        from ..exercises.ch2_ring import ring_allreduce as fn
    name = "Exercise 2 (ring all-reduce)"
    net = network(*NET)
    rows, passed, why = [], True, None
    for p, n in cases:
        try:
            res = launch.run(_trial, fn, n, 7 * p, ranks=p, network=net, timeout=timeout)
        except (errors.RankTimeout, errors.RankError) as exc:
            if why is not None:                       # an earlier case already shows what is wrong
                return CheckResult(name, False, why, rows)
            return CheckResult(name, False, _failed(p, exc, timeout), rows)
        own = next((v["own"] for v in res.values if v.get("own")), None)
        if own:
            return CheckResult(name, False, own_implementation(own), rows)
        problems = [(r, v["wrong"]) for r, v in enumerate(res.values) if v.get("wrong")]
        sends = [len(res.trace.of(r, "send")) for r in range(p)]
        sent = [sum(e.bytes for e in res.trace.of(r, "send")) for r in range(p)]
        measured, formula = res.trace.makespan, cost.ring_allreduce(p, 4 * n, net.nic)
        error = abs(measured - formula) / formula
        row = {"ranks": p, "elements": n, "sum": "ok" if not problems else f"rank {problems[0][0]}: {problems[0][1]}",
               "messages/rank": "/".join(map(str, sorted(set(sends)))), "expected": 2 * (p - 1),
               "time_us": f"{measured * 1e6:.2f}", "formula_us": f"{formula * 1e6:.2f}", "error": f"{error:.1%}"}
        ok = not problems and set(sends) == {2 * (p - 1)} and error <= 0.01
        row["ok"] = "yes" if ok else "no"
        rows.append(row)
        passed &= ok
        if not ok and why is None:
            why = _why(p, n, values=res.values, problems=problems, sends=sends, sent=sent, measured=measured,
                       formula=formula)
    if passed:
        return CheckResult(name, True, "correct sums, 2(p-1) messages per rank, and the ring's cost", rows)
    return CheckResult(name, False, why, rows)


def _failed(p, exc, timeout) -> str:
    """What to say when the ranks hung or one of them raised or died."""
    if isinstance(exc, errors.RankTimeout):
        waits = "; ".join(line.strip() for line in str(exc).splitlines()[1:])
        return (f"{p} ranks did not finish in {timeout:g} s -- a deadlock? {waits}. "
                "Hint: comm.send waits for the receiver; in a ring use comm.sendrecv.")
    if exc.exc_type == "NotImplementedError":
        return f"not implemented yet ({exc.remote_message})"
    why = f"on {p} ranks, rank {exc.rank} raised {exc.exc_type}: {exc.remote_message}"
    if exc.exc_type == "RankDied" and "SIGABRT" in exc.remote_message:
        why += (" (gloo aborts when a message is larger than the buffer that receives it: in each step, are the "
                "chunk sent and the buffer receiving it the same size on both sides?)")
    return why


def _why(p, n, values, problems, sends, sent, measured, formula) -> str:
    if problems and any("holds" in v for v in values):
        return explain_sums(p, n, values, sends)
    if problems:
        return f"on {p} ranks with {n} elements: rank {problems[0][0]}: {problems[0][1]}"
    case = f"on {p} ranks with {n} elements"
    if set(sends) != {2 * (p - 1)}:
        r = next(r for r, k in enumerate(sends) if k != 2 * (p - 1))
        why = f"{case}: right sums, but rank {r} sent {sends[r]} messages; a ring sends {2 * (p - 1)} per rank"
        if set(sends) == {p - 1}:
            why += (": right sums from p - 1 messages means each carried a whole vector (n elements, not one chunk "
                    "of about n/p), so every rank sent its whole gradient p - 1 times")
        return why
    ring_bytes = 2 * (p - 1) * 4 * n / p
    r = max(range(p), key=sent.__getitem__)
    if sent[r] > 1.01 * ring_bytes + 8 * p:
        return (f"{case}: right sums and {2 * (p - 1)} messages per rank, but rank {r} sent {sent[r]:,} bytes where a "
                f"ring sends about {ring_bytes:,.0f}: each message should carry one chunk")
    return (f"{case}: right sums, messages and bytes, but {measured * 1e6:.1f} us where the ring takes "
            f"{formula * 1e6:.1f} us ({measured / formula:.2f}x): the messages of one step did not travel at the "
            "same time. Does every rank send and receive at once, in every step?")
