"""Exercise 7: predict the time of a step whose gradient buckets overlap the backward pass.

The student writes ``predict_overlapped_step(bucket_bytes, ready_s, compute_s, optimizer_s, ranks,
bandwidth, latency)``. The check runs DDP-style bucketed steps on real ranks (``netlab.dataparallel.overlap``)
for several networks, bucket sizes and batches, hands the student each bucket's size and ready time,
and compares the prediction with the measured step: communication-bound steps, a latency-bound one,
a compute-bound one whose buckets but the last are hidden, and one with a batch so small that the
optimizer is a sixth of the compute. In the chapter's MLP the last bucket is ready only when the
backward pass ends, so one more case comes from the exercise's definition (``overlap.pipeline_time``)
with a backward pass that outlasts every all-reduce: there an answer that lets the optimizer start
before the backward pass has ended is wrong. A wrong answer is then tried on small cases of the
definition (one bucket alone, one rank, a hidden bucket, two buckets at once, a late bucket) and told
which one it gets wrong and what the step is there.

``find_bottleneck(answer, seed=...)`` grades the "Find the bottleneck" section: the student names the
culprit of the scenario their seed draws (``netlab.observe.scenarios``); the truth comes from the seed alone,
and each typical wrong answer (a victim named instead of the straggler, a slow NIC instead of a
spine, ...) gets its own hint, none of which names the culprit. One answer per seed is graded (the
first well-formed one, recorded): later answers for that seed get no verdict, so trying the ranks one
by one cannot pass; a hint depends on the kind named, never on which wrong place was named.

One concept: exercise 7's check, its measured reference step and the hints that explain a wrong answer,
which all read the same bucket schedule.
"""
from __future__ import annotations

import functools
import numbers

from . import CheckResult, Guard, call_student

CASES = [  # (ranks, bandwidth, latency, bucket bytes[, batch]) measured on real ranks
    (2, "10Gbit/s", "5us", 100_000),          # mixed: some buckets queue
    (4, "1Gbit/s", "50us", 300_000),          # communication-bound: the all-reduces set the step
    (4, "10Gbit/s", "50us", 1),               # one bucket per parameter: latency-bound
    (3, "25Gbit/s", "10us", 20_000),
    (2, "200Gbit/s", "1us", 100_000),         # compute-bound: all but the last bucket hidden
    (2, "100Gbit/s", "2us", 100_000, 2),      # batch 2: the optimizer is about 15 % of the compute
]
SHAPE = dict(width=256, layers=4, batch=64)
# From the exercise's definition, not measured: a backward pass that goes on after its last bucket is
# ready (a model that also needs its input's gradient, say). In the chapter's MLP the first layer's
# gradient is the backward's last product, so there every step ends with an exposed all-reduce; here the
# communication is hidden entirely, the regime overlap exists for.
SPEC_CASES = [  # (name, bucket bytes, ready s, compute s, optimizer s, ranks, bandwidth, latency)
    ("hidden behind the backward", [400_000, 300_000, 200_000], [2e-4, 5e-4, 8e-4], 3e-3, 4e-4, 4,
     "10Gbit/s", "10us"),
]


def _shape(case) -> dict:
    return dict(SHAPE, batch=case[4]) if len(case) > 4 else dict(SHAPE)


@functools.lru_cache(maxsize=64)
def measure(case) -> tuple:
    """(bucket bytes, ready s, compute s, optimizer s, measured step s) of one bucketed step on real ranks, for
    `case` = (ranks, bandwidth, latency, bucket bytes[, batch]) as in ``CASES``."""
    ranks, bandwidth, latency, cap, batch = (tuple(case) + (SHAPE["batch"],))[:5]
    from ..dataparallel import buckets, overlap, train
    from ..runtime import launch
    from ..net.network import network
    from ..net.presets import device
    shape = dict(SHAPE, batch=batch)
    dev = device("cpu-core")
    prof = buckets.backward_profile(shape["width"], shape["layers"], shape["batch"])
    size = dict(zip(prof.order, prof.nbytes))
    res = launch.run(overlap.overlapped_step, ranks=ranks, network=network(bandwidth, latency), device=dev,
                      bucket_bytes=cap, **shape)
    log = res.values[0]["buckets"]
    nbytes = [b["bytes"] for b in log]
    assert nbytes == [sum(size[i] for i in b) for b in buckets.plan(prof, cap)]
    return (tuple(nbytes), tuple(b["ready_s"] for b in log), dev.seconds(prof.total_flops),
            dev.seconds(2 * train.parameter_count(shape["width"], shape["layers"])), res.trace.makespan)


def _pipeline(nbytes, ready, compute, optimizer, ranks, bandwidth, latency) -> float:
    """The exercise's definition in closed form (``overlap.pipeline_time``), for the spec cases and the probes."""
    from ..dataparallel import overlap
    from ..net.network import Link
    return overlap.pipeline_time(list(nbytes), list(ready), compute, ranks, link=Link(bandwidth, latency),
                                 optimizer_s=optimizer)["total_s"]


def _number(fn, *args):
    got, problem = call_student(fn, *args)
    if problem:
        return None, problem
    try:
        return float(got), None
    except (TypeError, ValueError):
        return None, f"expected a number of seconds, got {got!r}"


def _us(seconds) -> str:
    return f"{seconds * 1e6:,.4g} us"


def diagnose(fn, ranks, bandwidth, latency, *, where) -> str | None:
    """Take a wrong pipeline apart with small cases of the exercise's definition (closed form)."""
    net = f"at {bandwidth * 8 / 1e9:g} Gbit/s, {latency * 1e6:g} us"
    on = f"on {ranks} ranks"
    n = 100_000
    ring = _pipeline([n], [0.0], compute=0.0, optimizer=0.0, ranks=ranks, bandwidth=bandwidth, latency=latency)
    c, o = 10 * ring + 1e-3, 2e-4
    probes = [
        (f"{on}, one bucket of 100,000 B ready at 0, no compute, no optimizer", ([n], [0.0], 0.0, 0.0, ranks), "the "
         "all-reduce of one bucket alone is off: its cost is chapter 2's ring"),
        (f"one rank (nothing to send), a backward of {_us(c)} and an optimizer of {_us(o)}", ([n], [c], c, o, 1),
         "with nothing to send the step is the backward pass, then the optimizer"),
        (f"{on}, one 1-byte bucket ready at 0, a backward of {_us(c)} and an optimizer of {_us(o)}",
         ([1], [0.0], c, o, ranks), "an all-reduce that ends during the backward pass is hidden: the optimizer "
         "still starts only when the backward pass ends"),
        (f"{on}, two buckets of 100,000 B both ready at 0, no compute, no optimizer",
         ([n, n], [0.0, 0.0], 0.0, 0.0, ranks),
         "the all-reduces share one communication stream: a bucket starts when the one before it has ended"),
        (f"{on}, one bucket of 100,000 B ready at {_us(c)}, the end of the backward pass",
         ([n], [c], c, 0.0, ranks),
         "a bucket's all-reduce cannot start before the bucket is ready"),
    ]
    for label, (b, r, comp, opt, p), what in probes:
        want = _pipeline(b, r, compute=comp, optimizer=opt, ranks=p, bandwidth=bandwidth, latency=latency)
        got, problem = _number(fn, b, r, comp, opt, p, bandwidth, latency)
        if problem is not None:
            return f"with {label}: {problem}"
        if abs(got - want) > 1e-3 * want:
            extra = ""
            if "optimizer" in label and abs(got - (want - opt)) <= 1e-3 * want:
                extra = " (in yours the optimizer adds nothing to this step)"
            return (f"{what}. {net[0].upper()}{net[1:]}, {label}, the step takes {_us(want)}; yours says "
                    f"{_us(got)}{extra}")
    return None


def overlapped_step_time(fn=None, tolerance: float = 0.01, cases=CASES, spec_cases=SPEC_CASES) -> CheckResult:
    """Compare fn's predictions with bucketed, overlapped steps measured on real ranks (relative `tolerance`),
    and with the exercise's definition where the backward pass outlasts its last bucket (`spec_cases`)."""
    from ..units import parse_bandwidth, parse_time
    if fn is None:
        from ..exercises.ch7_overlap import predict_overlapped_step as fn
    guarded = Guard(fn)
    name = "Exercise 7 (overlapped step)"
    rows, passed, wrong = [], True, []
    runs = [(c[0], c[1], c[2], "real ranks", lambda c=c: measure(c)) for c in cases]
    runs += [(c[5], c[6], c[7], f"definition: {c[0]}", lambda c=c: (c[1], c[2], c[3], c[4], _pipeline(
        c[1], c[2], compute=c[3], optimizer=c[4], ranks=c[5], bandwidth=parse_bandwidth(c[6]),
        latency=parse_time(c[7])))) for c in spec_cases]
    for ranks, bw, lat, source, get in runs:
        nbytes, ready, compute, optimizer, expected = get()
        B, alpha = parse_bandwidth(bw), parse_time(lat)
        guess, problem = _number(guarded, list(nbytes), list(ready), compute, optimizer, ranks, B, alpha)
        if problem:
            return CheckResult(name, False, problem, rows)
        error = abs(guess - expected) / expected
        ok = error <= tolerance
        passed &= ok
        if not ok:
            wrong.append((ranks, B, alpha, f"{ranks} ranks at {bw}, {lat} ({source})"))
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "buckets": len(nbytes), "source": source,
                     "expected_s": f"{expected:.6g}", "predicted_s": f"{guess:.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    if passed:
        return CheckResult(name, True, "your pipeline predicts every measured step", rows)
    ranks, B, alpha, where = wrong[0]
    message = diagnose(guarded, max(ranks, 2), B, alpha, where=where) or (
        f"on {where} your step is off by more than {tolerance:.0%} although each small case of the definition "
        "comes out right: look at that case's buckets in the table, bucket by bucket")
    return CheckResult(name, False, message, rows)


# ---- Find the bottleneck: name the culprit of a seeded scenario (netlab.observe.scenarios) ----------------

def _answer(answer):
    """(kind, where) from {"kind": ..., "rank": r} / {"kind": "spine", "leaf": [...]} / "kind" / (kind, where)."""
    if isinstance(answer, str):
        return answer, None
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and isinstance(answer[0], str):
        return answer[0], answer[1]
    if isinstance(answer, dict) and "kind" in answer:
        first, second = ("leaf", "rank") if answer["kind"] == "spine" else ("rank", "leaf")
        return answer["kind"], answer.get(first, answer.get(second))
    return None, None


def _ranks_of(where):
    try:
        return sorted({int(r) for r in where})
    except (TypeError, ValueError):
        return None


def _judge(plan, kind, where) -> tuple[bool, str]:
    """(right?, what to say): the typical wrong answers each get their own hint."""
    from ..observe.scenarios import KINDS
    truth, setup = plan.truth, plan.setup
    if kind not in KINDS:
        return False, f"kind must be one of {', '.join(KINDS)}; got {kind!r}"
    if kind == truth["kind"]:
        if kind == "small_bucket":
            return True, (f"buckets of {plan.knobs['bucket_bytes']:,} B: each all-reduce paid 2(p-1) alpha for little "
                          "data, so latency filled most of the NIC's busy time")
        if kind == "spine":
            leaf = _ranks_of(where if where is not None else ())
            if leaf in (truth["leaf"], truth["other"]):
                return True, (f"ranks {truth['leaf']} and {truth['other']} sit on two leaves joined by uplinks "
                              f"oversubscribed {plan.knobs['ratio']:g}:1")
            return False, ("right kind, wrong leaf: the pairs between leaves are the slow ones, the pairs inside a "
                           "leaf run at the NIC's speed; walk the ring and change leaf at each slow hop")
        where = int(where)
        if where == truth["rank"]:
            what = {"slow_link": f"rank {where}'s NIC ran at {plan.knobs.get('fraction', 0):.0%} of the others' bandwidth",
                    "straggler": f"rank {where} computed {plan.knobs.get('slowdown', 0):g} times longer than the others",
                    "hot_shard": f"server rank {where} holds the popular key range (Zipf a = "
                                 f"{plan.knobs.get('zipf', 0):g}) and took most pulls and pushes",
                    "pfc_storm": f"rank {where}'s NIC paused the switch port toward it "
                                 f"{plan.knobs.get('fraction', 0):.0%} of every "
                                 f"{plan.knobs.get('period', 0) * 1e6:g} us: a PFC pause storm, which the switch "
                                 f"passed on to the NIC that feeds that port"}[kind]
            return True, what
        hint = {"slow_link": "some of that rank's pairs move their bytes at the NIC's full speed; the slow NIC is "
                             "the one rank that every slow pair touches (peer_links with the stated latency)",
                "straggler": "that rank waits inside the all-reduce for the straggler; the straggler computes the "
                             "longest and enters the collective last, spending the least time in it",
                "hot_shard": "that rank receives no more than the other servers; the hot shard is the server whose "
                             "incoming bytes stand out",
                "pfc_storm": "the switch paused that rank's NIC, or nothing paused it: a victim. The storm starts "
                             "at the one switch port that its own host pauses (analysis.pauses: by='host')"}[kind]
        return False, f"right kind, wrong rank: {hint}"
    storm = truth["kind"] == "pfc_storm"
    hints = {
        "pfc_storm": "no port of this run was paused: its network has no switch with PFC (see the setup), so "
                     "nothing could send a PAUSE",
        "straggler": "every rank computes for the same time (breakdown's compute_s); a rank that enters a collective "
                     "last there was held up by the network, not by its own compute",
        "slow_link": ("every NIC sends at the stated speed while it runs; the slow pair's bytes waited in "
                      "paused ports (analysis.pauses): who paused them?" if storm else
                      "the slow pairs do not all touch one rank: in a ring they are the pairs whose two ranks sit on "
                      "different leaves" if truth["kind"] == "spine" else
                      "every pair of ranks moves its bytes at the NIC's stated bandwidth (peer_links with the stated "
                      "latency): no NIC is slow"),
        "spine": ("one switch joins the NICs here (the setup): there is no spine; look at which ports were "
                  "paused, and by whom" if storm else
                  "the slow pairs all share one rank: a spine slows the pairs between leaves, and in a ring those "
                  "share no rank" if truth["kind"] == "slow_link" else
                  "no pair of ranks is slower than the NIC's stated bandwidth, so nothing between leaves holds the "
                  "bytes back"),
        "hot_shard": ("this is not a parameter-server run" if setup["workload"] != "ps" else
                      "the servers receive bytes of the same order; look at how fast each pair moves its bytes"),
        "small_bucket": ("this run has no gradient buckets: it is a parameter-server run" if setup["workload"] == "ps"
                         else "the step has few all-reduces and latency is a small part of the NIC's busy time; "
                              "something else sets the step"),
    }
    return False, hints[kind]


RANKED = ("slow_link", "straggler", "hot_shard", "pfc_storm")      # kinds whose culprit is a rank
PRACTICE = "practice-1"


def _malformed(kind, where, setup) -> str | None:
    """What is missing from an answer, judged from the public setup alone (never from the culprit)."""
    from ..observe.scenarios import KINDS
    if kind not in KINDS:
        return f"kind must be one of {', '.join(KINDS)}; got {kind!r}"
    ranks = setup["ranks"]
    if kind in RANKED:
        if not isinstance(where, numbers.Integral) or isinstance(where, bool) or not 0 <= int(where) < ranks:
            return (f"name the rank too, a whole number from 0 to {ranks - 1}: {{'kind': {kind!r}, 'rank': ...}} "
                    f"(got {where!r})")
    if kind == "hot_shard" and setup.get("servers") and int(where) not in setup["servers"]:
        return f"rank {int(where)} is not a parameter server here (servers: ranks {setup['servers']})"
    if kind == "spine":
        leaf = _ranks_of(where if where is not None else ())
        if not leaf or not all(0 <= r < ranks for r in leaf) or len(leaf) >= ranks:
            return ("name the ranks of one leaf, e.g. {'kind': 'spine', 'leaf': [0, 1]}: some of the "
                    f"{ranks} ranks, not all of them (got {where!r})")
    return None


def _normal(kind, where) -> dict:
    if kind in RANKED:
        return {"kind": kind, "rank": int(where)}
    if kind == "spine":
        return {"kind": kind, "leaf": _ranks_of(where)}
    return {"kind": kind}


_MEMORY: dict = {}                  # answers per log path, where the log file cannot be written


def _log_path(answers) -> str:
    import os
    return answers or os.environ.get("NETLAB_ANSWERS") or os.path.join(os.path.expanduser("~"), ".netlab",
                                                                         "answers.json")


def _recorded(path: str) -> dict:
    import json
    try:
        with open(path) as f:
            return json.load(f).get("find_bottleneck", {})
    except (OSError, ValueError):
        return dict(_MEMORY.get(path, {}))


def _record(path: str, seed: int, entry: dict) -> None:
    import json
    import os
    book = _recorded(path)
    book[str(seed)] = entry
    _MEMORY[path] = book
    try:
        try:
            with open(path) as f:
                whole = json.load(f)
        except (OSError, ValueError):
            whole = {}
        whole["find_bottleneck"] = book
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(whole, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass                        # a read-only home: the kernel's memory keeps it


def find_bottleneck(answer=None, seed=0, *, answers: str | None = None) -> CheckResult:
    """Grade a named culprit of the scenario `seed` draws (``netlab.observe.scenarios.draw``): its kind, and its rank
    (slow_link, straggler, hot_shard, pfc_storm) or the ranks of one leaf (spine). Nothing is run: the seed decides.

    One answer per seed is graded: the first well-formed one (a known kind, with a rank or a leaf where the kind
    has one; an answer with something missing is told what, judged from the public setup alone, and does not
    count). It is recorded in `answers` (a JSON file; default ``$NETLAB_ANSWERS`` or ``~/.netlab/answers.json``,
    the kernel's memory where that cannot be written). A wrong graded answer gets a hint about the evidence that
    is the same whichever wrong place it named; any later, different answer for that seed gets no verdict at all,
    so the check cannot be used to try the ranks one by one. Other seeds (``seed="practice-1"``, ...) are there
    to practise on, each with its own one answer.
    """
    from ..observe.scenarios import check_seed, pick, plan
    seed = check_seed(seed)
    name = "Find the bottleneck"
    p = plan(pick(seed), seed)
    if answer is None or answer == {} or answer == {"kind": None}:
        return CheckResult(name, False, "not answered yet: set ANSWER to the culprit, e.g. "
                                        "{'kind': 'slow_link', 'rank': 2}")
    kind, where = _answer(answer)
    if kind is None:
        return CheckResult(name, False, f"expected {{'kind': ..., 'rank': ...}} (or 'leaf': [...]), got {answer!r}")
    missing = _malformed(kind, where, p.setup)
    if missing:
        return CheckResult(name, False, f"{missing} (not counted as your answer)")
    mine = _normal(kind, where)
    path = _log_path(answers)
    graded = _recorded(path).get(str(seed))
    if graded is None:
        ok, message = _judge(p, kind, where)
        if not ok:
            message += (" " if message.endswith("?") else ". ") + (
                "This seed's one answer is now recorded; later answers for it get no verdict. Practise on "
                f"another seed, e.g. seed={PRACTICE!r}")
        graded = {"answer": mine, "passed": ok, "message": message}
        _record(path, seed, graded)
    elif graded["answer"] != mine:
        verdict = "was right" if graded["passed"] else "was not right"
        return CheckResult(name, graded["passed"], f"not graded: this seed's answer was {graded['answer']}, which "
                           f"{verdict}; a later answer gets no verdict. Practise on another seed, e.g. "
                           f"seed={PRACTICE!r}", [{"seed": seed, "your answer": answer, "graded answer":
                                                   graded["answer"], "ok": "yes" if graded["passed"] else "no"}])
    ok = graded["passed"]
    return CheckResult(name, ok, graded["message"],
                       [{"seed": seed, "your answer": answer, "ok": "yes" if ok else "no"}])


from .ch7_capstone import capstone  # noqa: E402,F401 -- the capstone exercise (check/ch7_capstone.py)
