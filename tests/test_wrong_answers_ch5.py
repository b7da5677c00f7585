"""Exercise 5 (max-min fair sharing): typical wrong answers, written as a student would, are all rejected with a
message that names the case, the flow, its fair rate, its level of the filling and its bottleneck; the cases'
fair rates are checked against hand-computed ones."""
import pytest

import netlab.check as check
from netlab.check import ch5
from solutions import ch5_max_min

right = ch5_max_min.max_min_rates
GB = ch5.GB


def _cases():
    return {name: (flows, cap) for name, flows, cap in ch5._textbook()}


def test_the_deep_cases_have_the_fair_rates_worked_out_by_hand():
    """Progressive filling by hand (GB/s). chain: a fills at 1 (flows 0, 1), b at 4 (flow 2), c at 6 (flow 3).
    staircase: a and e fill at 1, b and g at 4, c at 6, d at 10: four levels, two ties."""
    from netlab.sim import max_min_rates as simulator
    chain, staircase = _cases()["chain"], _cases()["staircase with ties"]
    for (flows, cap), want in ((chain, [1, 1, 4, 6]), (staircase, [1, 1, 4, 6, 10, 1, 1, 4, 4])):
        for fn in (right, simulator):
            assert fn(flows, cap) == pytest.approx([w * GB for w in want], rel=1e-9)
    assert len(ch5.levels(simulator(*staircase))) == 4


def equal_split_of_first_link(flows, capacity):
    return [capacity[f[0]] / sum(f[0] in g for g in flows) for f in flows]


def one_level(flows, capacity):                         # each flow gets its most crowded link's equal share
    load = {}
    for f in flows:
        for link in f:
            load[link] = load.get(link, 0) + 1
    return [min(capacity[link] / load[link] for link in f) for f in flows]


def forgets_to_freeze(flows, capacity):                 # raises every flow until the first link fills, then stops
    load = {}
    for f in flows:
        for link in f:
            load[link] = load.get(link, 0) + 1
    level = min(capacity[link] / n for link, n in load.items())
    return [level] * len(flows)


def one_round_and_share_out(flows, capacity):           # one round of filling, then the leftover shared once
    load = {}
    for f in flows:
        for link in f:
            load[link] = load.get(link, 0) + 1
    level = min(capacity[link] / n for link, n in load.items())
    full = {link for link, n in load.items() if capacity[link] <= level * n * (1 + 1e-12)}
    rate = [level] * len(flows)
    frozen = [bool(full & set(f)) for f in flows]
    left = {link: capacity[link] - level * n for link, n in load.items()}
    open_ = {link: sum(1 for f, fr in zip(flows, frozen) if link in f and not fr) for link in load}
    for i, f in enumerate(flows):
        if not frozen[i]:
            rate[i] += min(left[link] / open_[link] for link in f)
    return rate


def rounds(limit):
    def filling(flows, capacity):                       # progressive filling that stops after `limit` rounds
        rate, left, frozen = [0.0] * len(flows), dict(capacity), [False] * len(flows)
        for _ in range(limit):
            if all(frozen):
                break
            crossing = {}
            for f, path in enumerate(flows):
                if not frozen[f]:
                    for link in path:
                        crossing[link] = crossing.get(link, 0) + 1
            up = min(left[link] / n for link, n in crossing.items())
            for f in range(len(flows)):
                if not frozen[f]:
                    rate[f] += up
            for link, n in crossing.items():
                left[link] -= up * n
            for f, path in enumerate(flows):
                if any(left[link] <= 1e-9 * capacity[link] for link in path):
                    frozen[f] = True
        return rate
    filling.__name__ = f"stops_after_{limit}_rounds"
    return filling


def never_subtracts(flows, capacity):                   # each round shares a link's whole capacity again
    rate, frozen = [0.0] * len(flows), [False] * len(flows)
    while not all(frozen):
        crossing = {}
        for f, path in enumerate(flows):
            if not frozen[f]:
                for link in path:
                    crossing[link] = crossing.get(link, 0) + 1
        share = {link: capacity[link] / n for link, n in crossing.items()}
        low = min(share.values())
        for f, path in enumerate(flows):
            if not frozen[f] and any(share[link] <= low * (1 + 1e-12) for link in path):
                rate[f], frozen[f] = low, True
    return rate


def one_bottleneck_per_share(flows, capacity):
    """Links keyed by their share, so a tie keeps one of the links that fill: still right, since the flows of the
    other one get a raise of 0 in the next round and freeze then."""
    rate, left, frozen = [0.0] * len(flows), dict(capacity), [False] * len(flows)
    while not all(frozen):
        crossing = {}
        for f, path in enumerate(flows):
            if not frozen[f]:
                for link in path:
                    crossing[link] = crossing.get(link, 0) + 1
        by_share = {left[link] / n: link for link, n in crossing.items()}
        up = min(by_share)
        neck = by_share[up]
        for f in range(len(flows)):
            if not frozen[f]:
                rate[f] += up
        for link, n in crossing.items():
            left[link] -= up * n
        for f, path in enumerate(flows):
            if neck in path:
                frozen[f] = True
    return rate


def first_link_only(flows, capacity):                   # a flow freezes only when the first link of its route fills
    rate, left, frozen = [0.0] * len(flows), dict(capacity), [False] * len(flows)
    for _ in range(len(flows) + 1):
        if all(frozen):
            break
        crossing = {}
        for f, path in enumerate(flows):
            if not frozen[f]:
                for link in path:
                    crossing[link] = crossing.get(link, 0) + 1
        up = min(left[link] / n for link, n in crossing.items())
        for f in range(len(flows)):
            if not frozen[f]:
                rate[f] += up
        for link, n in crossing.items():
            left[link] -= up * n
        for f, path in enumerate(flows):
            if left[path[0]] <= 1e-9 * capacity[path[0]]:
                frozen[f] = True
    return rate


def in_gbit(flows, capacity):
    return [8 * r / 1e9 for r in right(flows, capacity)]


def sorted_rates(flows, capacity):
    return sorted(right(flows, capacity))


def calls_the_simulator(flows, capacity):
    from netlab.sim import max_min_rates as fair
    return fair(flows, capacity)


def calls_the_fabric_module(flows, capacity):
    import netlab.sim.maxmin
    return netlab.sim.maxmin.max_min_rates(flows, capacity)


WRONG = [
    (equal_split_of_first_link, "should have frozen it"),
    (one_level, "frozen too early"),
    (forgets_to_freeze, "frozen too early"),
    (one_round_and_share_out, "chain: flow 3"),
    (rounds(2), "third of the 3 levels"),
    (rounds(3), "fourth of the 4 levels"),
    (never_subtracts, "dumbbell: flow 1"),
    (first_link_only, "should have frozen it"),
    (in_gbit, "return bytes per second"),
    (sorted_rates, "not in the order of `flows`"),
    (calls_the_simulator, "netlab.sim.maxmin.max_min_rates"),
    (calls_the_fabric_module, "netlab.sim.maxmin.max_min_rates"),
]


@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_answer_is_rejected_and_told_which_flow(answer, words):
    result = check.max_min_rates(answer)
    assert not result.passed, result
    assert words in result.message, result.message


def test_the_issues_one_round_answer_gives_5_where_max_min_gives_6():
    flows, cap = _cases()["chain"]
    assert one_round_and_share_out(flows, cap)[3] == pytest.approx(5 * GB)
    result = check.max_min_rates(one_round_and_share_out)
    assert "gets 5 GB/s; its max-min fair rate is 6 GB/s" in result.message, result.message


def bottleneck_elimination(flows, capacity):
    """Right, written another way: the classic algorithm -- fix the flows of the most constrained link, remove it."""
    rate = [None] * len(flows)
    left = dict(capacity)
    while any(r is None for r in rate):
        open_ = {}
        for f, path in enumerate(flows):
            if rate[f] is None:
                for link in path:
                    open_[link] = open_.get(link, 0) + 1
        link = min(open_, key=lambda l: left[l] / open_[l])
        share = left[link] / open_[link]
        for f, path in enumerate(flows):
            if rate[f] is None and link in path:
                rate[f] = share
                for other in path:
                    left[other] -= share
    return rate


@pytest.mark.parametrize("answer", [right, bottleneck_elimination, one_bottleneck_per_share])
def test_right_answers_pass(answer):
    check.max_min_rates(answer).assert_passed()
