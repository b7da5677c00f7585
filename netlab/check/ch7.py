"""Exercise 7: predict the time of a step whose gradient buckets overlap the backward pass.

The student writes ``predict_overlapped_step(bucket_bytes, ready_s, compute_s, optimizer_s, ranks,
bandwidth, latency)``. The check runs DDP-style bucketed steps on real ranks (``netlab.overlap``)
for several networks and bucket sizes, hands the student each bucket's size and ready time, and
compares the prediction with the measured step.

``find_bottleneck(answer, seed=...)`` grades the "Find the bottleneck" section: the student names the
culprit of the scenario their seed draws (``netlab.scenarios``); the truth comes from the seed alone,
and each typical wrong answer (a victim named instead of the straggler, a slow NIC instead of a
spine, ...) gets its own hint, none of which names the culprit.
"""
from __future__ import annotations

import numbers

from . import CheckResult, call_student

CASES = [  # (ranks, bandwidth, latency, bucket bytes)
    (2, "10Gbit/s", "5us", 100_000),
    (4, "1Gbit/s", "50us", 300_000),
    (4, "10Gbit/s", "50us", 1),
    (3, "25Gbit/s", "10us", 20_000),
]
SHAPE = dict(width=256, layers=4, batch=64)


def overlapped_step_time(fn=None, tolerance: float = 0.01, cases=CASES) -> CheckResult:
    """Compare fn's predictions with bucketed, overlapped steps measured on real ranks (relative `tolerance`)."""
    from .. import buckets, cluster, overlap, train
    from ..net.network import network
    from ..net.presets import device
    if fn is None:
        from ..exercises.ch7_overlap import predict_overlapped_step as fn
    name = "Exercise 7 (overlapped step)"
    dev = device("cpu-core")
    prof = buckets.backward_profile(SHAPE["width"], SHAPE["layers"], SHAPE["batch"])
    size = dict(zip(prof.order, prof.nbytes))
    compute = dev.seconds(prof.total_flops)
    optimizer = dev.seconds(2 * train.parameter_count(SHAPE["width"], SHAPE["layers"]))
    rows, passed = [], True
    for ranks, bw, lat, cap in cases:
        net = network(bw, lat)
        res = cluster.run(overlap.overlapped_step, ranks=ranks, network=net, device=dev, bucket_bytes=cap, **SHAPE)
        log = res.values[0]["buckets"]
        nbytes = [b["bytes"] for b in log]
        ready = [b["ready_s"] for b in log]
        plan = buckets.plan(prof, cap)
        assert nbytes == [sum(size[i] for i in b) for b in plan]
        measured = res.trace.makespan
        guess, problem = call_student(fn, nbytes, ready, compute, optimizer, ranks, net.nic.bandwidth, net.nic.latency)
        if problem:
            return CheckResult(name, False, problem)
        try:
            error = abs(float(guess) - measured) / measured
        except (TypeError, ValueError):
            return CheckResult(name, False, f"expected a number of seconds, got {guess!r}")
        ok = error <= tolerance
        passed &= ok
        rows.append({"ranks": ranks, "bandwidth": bw, "latency": lat, "buckets": len(nbytes),
                     "measured_s": f"{measured:.6g}", "predicted_s": f"{float(guess):.6g}",
                     "error": f"{error:.1%}", "ok": "yes" if ok else "no"})
    message = ("your pipeline predicts every measured step" if passed else
               "some predictions are off: does each bucket wait for the one before it?")
    return CheckResult(name, passed, message, rows)


# ---- Find the bottleneck: name the culprit of a seeded scenario (netlab.scenarios) ----------------

def _answer(answer):
    """(kind, where) from {"kind": ..., "rank": r} / {"kind": "spine", "leaf": [...]} / "kind" / (kind, where)."""
    if isinstance(answer, str):
        return answer, None
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and isinstance(answer[0], str):
        return answer[0], answer[1]
    if isinstance(answer, dict) and "kind" in answer:
        return answer["kind"], answer.get("leaf", answer.get("rank"))
    return None, None


def _ranks_of(where):
    try:
        return sorted({int(r) for r in where})
    except (TypeError, ValueError):
        return None


def _judge(plan, kind, where) -> tuple[bool, str]:
    """(right?, what to say): the typical wrong answers each get their own hint."""
    from ..scenarios import KINDS
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
            return False, ("name the ranks of one leaf, e.g. {'kind': 'spine', 'leaf': [0, 1]}: the pairs between "
                           "leaves are the slow ones, the pairs inside a leaf run at the NIC's speed")
        if not isinstance(where, numbers.Integral) or isinstance(where, bool):
            return False, f"right kind; now name the rank too: {{'kind': {kind!r}, 'rank': ...}}"
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
        if kind == "hot_shard" and where not in setup.get("servers", []):
            hint = f"rank {where} is not a parameter server here (servers: ranks {setup.get('servers')})"
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


def find_bottleneck(answer=None, seed=0) -> CheckResult:
    """Grade a named culprit of the scenario `seed` draws (``netlab.scenarios.draw``): its kind, and its rank
    (slow_link, straggler, hot_shard, pfc_storm) or the ranks of one leaf (spine). Nothing is run: the seed decides."""
    from ..scenarios import check_seed, pick, plan
    seed = check_seed(seed)
    name = "Find the bottleneck"
    p = plan(pick(seed), seed)
    if answer is None or answer == {} or answer == {"kind": None}:
        return CheckResult(name, False, "not answered yet: set ANSWER to the culprit, e.g. "
                                        "{'kind': 'slow_link', 'rank': 2}")
    kind, where = _answer(answer)
    if kind is None:
        return CheckResult(name, False, f"expected {{'kind': ..., 'rank': ...}} (or 'leaf': [...]), got {answer!r}")
    ok, message = _judge(p, kind, where)
    return CheckResult(name, ok, message, [{"seed": seed, "your answer": answer, "ok": "yes" if ok else "no"}])


from .ch7_capstone import capstone  # noqa: E402,F401 -- the capstone exercise (check/ch7_capstone.py)
