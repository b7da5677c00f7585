"""Exercise 9 (REPS's entropy recycling): the stub fails, the reference passes, and every typical wrong
answer is rejected with a message that names the case and what was expected there, not the code."""
import pytest

import netlab.check as check
from solutions import ch9_reps


def test_the_stub_fails_and_the_reference_passes():
    stub = check.reps_recycling()
    assert not stub.passed and "not implemented" in stub.message
    result = check.reps_recycling(ch9_reps.reps).assert_passed()
    assert all(row["ok"] == "yes" for row in result.rows) and len(result.rows) == 10


def lifo(buffer, event, entropy, size=8):                 # the newest first
    if event == "send":
        return (buffer[-1], buffer[:-1]) if buffer else (entropy, list(buffer))
    return ch9_reps.reps(buffer, event, entropy, size)


def marked_too(buffer, event, entropy, size=8):           # recycles what ECN marked
    return ch9_reps.reps(buffer, "clean" if event == "marked" else event, entropy, size)


def trimmed_too(buffer, event, entropy, size=8):          # recycles a NACKed packet's entropy
    return ch9_reps.reps(buffer, "clean" if event == "trimmed" else event, entropy, size)


def lost_too(buffer, event, entropy, size=8):             # recycles a lost packet's entropy
    return ch9_reps.reps(buffer, "clean" if event == "lost" else event, entropy, size)


def unbounded(buffer, event, entropy, size=8):            # no limit on the buffer
    if event == "clean":
        return None, list(buffer) + [entropy]
    return ch9_reps.reps(buffer, event, entropy, size)


def full_keeps_old(buffer, event, entropy, size=8):       # a full buffer refuses the new entropy
    if event == "clean" and len(buffer) >= size:
        return None, list(buffer)
    return ch9_reps.reps(buffer, event, entropy, size)


def never_recycles(buffer, event, entropy, size=8):       # oblivious spraying
    return (entropy, []) if event == "send" else (None, [])


def reuses_without_removing(buffer, event, entropy, size=8):
    if event == "send" and buffer:
        return buffer[0], list(buffer)
    return ch9_reps.reps(buffer, event, entropy, size)


def changes_the_callers_list(buffer, event, entropy, size=8):
    if event == "clean":
        buffer.append(entropy)
        del buffer[:-size]
        return None, buffer
    return ch9_reps.reps(buffer, event, entropy, size)


def always_explores(buffer, event, entropy, size=8):
    if event == "send":
        return entropy, list(buffer)
    return ch9_reps.reps(buffer, event, entropy, size)


def one_short(buffer, event, entropy, size=8):            # holds size - 1
    return ch9_reps.reps(buffer, event, entropy, size - 1)


WRONG = [
    (lifo, "a send with recycled entropies", "waited longest"),
    (marked_too, "a marked ACK", "must not make its entropy reusable"),
    (trimmed_too, "a trimmed packet", "must not make its entropy reusable"),
    (lost_too, "a lost packet", "must not make its entropy reusable"),
    (unbounded, "a clean ACK into a full buffer", "at most 8"),
    (full_keeps_old, "a clean ACK into a full buffer", "newest"),
    (never_recycles, "a send with recycled entropies", "waited longest"),
    (reuses_without_removing, "a send with recycled entropies", "taken out"),
    (changes_the_callers_list, "a clean ACK", "changed the list it was given"),
    (always_explores, "a send with recycled entropies", "waited longest"),
    (one_short, "a clean ACK into a full buffer", "at most 8"),
]


@pytest.mark.parametrize("fn, case, expected", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_a_wrong_answer_is_rejected_naming_the_case_and_what_was_expected(fn, case, expected):
    result = check.reps_recycling(fn)
    assert not result.passed
    assert result.message.startswith(case) and expected in result.message, result.message
    assert "def " not in result.message and "buffer[0]" not in result.message       # no code given away


def test_an_answer_right_on_every_case_but_wrong_elsewhere_is_caught_by_the_fabric():
    def newest_wins_on_ties(buffer, event, entropy, size=8):
        if event == "send" and len(buffer) > 3:                       # wrong only with 4 or more to choose from
            return buffer[1], [buffer[0]] + list(buffer[2:])
        return ch9_reps.reps(buffer, event, entropy, size)
    result = check.reps_recycling(newest_wins_on_ties)
    assert not result.passed and result.message.startswith("the failing fabric"), result.message


def test_the_graders_hidden_variant_follows_the_seed_and_the_reference_passes_it():
    from netlab.assignment import BY_CHAPTER, variants
    from netlab.check import ch9
    assert BY_CHAPTER["ch9"].notebook == "09_ethernet_for_ai.ipynb"
    a, b = variants.draw("ch9", 5)[1], variants.draw("ch9", 6)[1]
    assert a == variants.draw("ch9", 5)[1] and a != b
    original = (ch9.CASES, ch9.FABRIC)
    try:
        result = variants.run_check("ch9", ch9_reps.reps, seed=5)
        assert result.passed and any(row["case"].startswith("drawn step") for row in result.rows)
        assert not variants.run_check("ch9", lifo, seed=5).passed
    finally:
        ch9.CASES, ch9.FABRIC = original
