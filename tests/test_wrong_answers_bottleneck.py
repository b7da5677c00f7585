"""Find the bottleneck: typical wrong answers fail, a wrong place fails even with the right kind, and guessing
through the ranks does not pass: one answer per seed is graded, and the feedback never depends on which wrong
place was named. Nothing runs here: the seed alone decides the culprit (netlab.observe.scenarios.plan)."""
import pytest

from netlab.observe import scenarios
from netlab.check import ch7


def seed_of(kind, workload=None, start=0):
    for s in range(start, 2000):
        if scenarios.pick(s) == kind and (workload is None or scenarios.plan(kind, s).setup["workload"] == workload):
            return s
    raise AssertionError(kind)


@pytest.fixture
def log(tmp_path):
    return str(tmp_path / "answers.json")


def judge(answer, seed, log):
    return ch7.find_bottleneck(answer, seed=seed, answers=log)


def truth(seed):
    return scenarios.plan(scenarios.pick(seed), seed).truth


def wrong_answers():
    """(seed, answer a student would give, words of the hint)."""
    straggler, slow, spine = seed_of("straggler"), seed_of("slow_link", "allreduce"), seed_of("spine")
    shard, storm, bucket = seed_of("hot_shard"), seed_of("pfc_storm"), seed_of("small_bucket")
    t = {s: truth(s) for s in (straggler, slow, spine, shard, storm)}
    other = lambda s, n=4: (t[s]["rank"] + 1) % n                                            # noqa: E731
    servers = scenarios.plan("hot_shard", shard).setup["servers"]
    return [
        (straggler, {"kind": "straggler", "rank": other(straggler)}, "waits inside the all-reduce"),   # a victim
        (slow, {"kind": "slow_link", "rank": other(slow)}, "right kind, wrong rank"),
        (spine, {"kind": "spine", "leaf": [t[spine]["leaf"][0], t[spine]["other"][0]]}, "right kind, wrong leaf"),
        (spine, {"kind": "slow_link", "rank": 0}, "do not all touch one rank"),
        (slow, {"kind": "spine", "leaf": [0, 1]}, "share one rank"),
        (storm, {"kind": "pfc_storm", "rank": (t[storm]["rank"] - 1) % 4}, "a victim"),   # the NIC the switch paused
        (storm, {"kind": "slow_link", "rank": t[storm]["rank"]}, "who paused them"),
        (shard, {"kind": "hot_shard", "rank": next(r for r in servers if r != t[shard]["rank"])},
         "incoming bytes stand out"),
        (straggler, {"kind": "small_bucket"}, "something else sets the step"),
        (bucket, {"kind": "straggler", "rank": 1}, "every rank computes for the same time"),
        (shard, {"kind": "small_bucket"}, "parameter-server run"),
    ]


def test_every_typical_wrong_answer_fails_with_its_hint(log):
    for seed, answer, words in wrong_answers():
        res = ch7.find_bottleneck(answer, seed=seed, answers=log + str(seed) + str(answer))
        assert not res.passed, (seed, answer)
        assert words in res.message, (answer, res.message)
        t = truth(seed)
        if "rank" in t:
            assert f"rank {t['rank']}" not in res.message                  # never names the culprit


def test_the_right_answer_passes_and_stays_passed(log):
    for kind in scenarios.KINDS:
        seed = seed_of(kind)
        t = truth(seed)
        answer = {"kind": "spine", "leaf": t["other"]} if kind == "spine" else dict(t)
        assert judge(answer, seed, log).passed
        assert judge(answer, seed, log).passed                             # asking again changes nothing


def test_guessing_through_every_rank_does_not_pass(log):
    for kind in ("slow_link", "straggler", "pfc_storm", "hot_shard"):
        seed = seed_of(kind)
        setup, t = scenarios.plan(kind, seed).setup, truth(seed)
        ranks = setup.get("servers") if kind == "hot_shard" else range(setup["ranks"])
        guesses = [r for r in ranks if r != t["rank"]][:1] + [t["rank"]]  # one wrong, then the culprit
        results = [judge({"kind": kind, "rank": r}, seed, log) for r in guesses]
        assert not any(r.passed for r in results), kind
        # the culprit, tried later, gets no verdict: the same words as any other later guess
        later = [r for r in ranks if r not in guesses]
        if later:
            other = judge({"kind": kind, "rank": later[0]}, seed, log).message
            assert results[-1].message == other
        assert "not graded" in results[-1].message


def test_a_hint_is_the_same_whichever_wrong_place_was_named(tmp_path):
    seed = seed_of("straggler")
    t = truth(seed)
    hints = {ch7.find_bottleneck({"kind": "straggler", "rank": r}, seed=seed, answers=str(tmp_path / f"{r}.json"))
             .message for r in range(4) if r != t["rank"]}
    assert len(hints) == 1


def test_an_incomplete_answer_is_told_what_is_missing_without_a_verdict_and_does_not_count(log):
    for kind in scenarios.KINDS:
        seed = seed_of(kind)
        # the same words whatever the culprit: a rankless answer does not reveal whether the kind is right
        messages = {k: judge(k, seed, log).message for k in ("slow_link", "straggler", "pfc_storm")}
        for k, m in messages.items():
            assert "not counted" in m and m.startswith("name the rank too")
    seed = seed_of("straggler")
    assert judge({"kind": "straggler", "rank": 9}, seed, log).message.startswith("name the rank too")
    assert judge({"kind": "spine", "leaf": [0, 1, 2, 3]}, seed, log).message.startswith("name the ranks of one leaf")
    assert judge(dict(truth(seed)), seed, log).passed                      # none of that counted


def test_the_graded_answer_survives_a_new_kernel(log):
    seed = seed_of("straggler")
    t = truth(seed)
    assert not judge({"kind": "straggler", "rank": (t["rank"] + 1) % 4}, seed, log).passed
    ch7._MEMORY.clear()                                                    # a restarted kernel: only the file is left
    again = judge(dict(t), seed, log)
    assert not again.passed and "not graded" in again.message


def test_practice_seeds_each_have_their_own_answer(log):
    name = "practice-7"
    t = truth(scenarios.check_seed(name))
    answer = {"kind": "spine", "leaf": t["leaf"]} if t["kind"] == "spine" else dict(t)
    assert judge(answer, name, log).passed
