"""Exercise 6 (DCTCP's window): the stub fails, the reference passes, and typical wrong answers are
rejected with a message that names the case and the wrong term, never the formula.

The reference's order of events is Linux's (tcp_dctcp.c, RFC 8257 section 3.3): a window with marks is
cut with the alpha the sender has when the first mark arrives, and alpha takes in the window's marks
when it ends. The fabric's own DCTCP sender is held to the same order below.
"""
import re

import pytest

import netlab.check as check
from netlab.assignment import variants
from solutions import ch6_dctcp

right = ch6_dctcp.dctcp_update


def test_ch6_stub_fails_and_reference_passes():
    stub = check.dctcp_update()
    assert not stub.passed and "not implemented" in stub.message
    result = check.dctcp_update(right).assert_passed()
    assert len(result.rows) == 8 and all(row["ok"] == "yes" for row in result.rows)


def _avg(alpha, acked, marked, g):
    return (1 - g) * alpha + g * marked / acked


def _cut(cwnd, alpha):
    return max(cwnd * (1 - alpha / 2), 2.0)


def reno_halving(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, marked, g), (max(cwnd / 2, 2.0) if marked else cwnd)


def cut_with_the_new_alpha(alpha, cwnd, acked, marked, g=1 / 16):      # the chapter's old hint
    alpha = _avg(alpha, acked, marked, g)
    return alpha, (_cut(cwnd, alpha) if marked else cwnd)


def no_moving_average(alpha, cwnd, acked, marked, g=1 / 16):
    return marked / acked, (_cut(cwnd, alpha) if marked else cwnd)


def swapped_weights(alpha, cwnd, acked, marked, g=1 / 16):
    return g * alpha + (1 - g) * marked / acked, (_cut(cwnd, alpha) if marked else cwnd)


def cut_by_all_of_alpha(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, marked, g), (max(cwnd * (1 - alpha), 2.0) if marked else cwnd)


def cut_without_marks(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, marked, g), _cut(cwnd, alpha)


def no_floor(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, marked, g), (cwnd * (1 - alpha / 2) if marked else cwnd)


def fraction_of_the_window(alpha, cwnd, acked, marked, g=1 / 16):
    return (1 - g) * alpha + g * marked / cwnd, (_cut(cwnd, alpha) if marked else cwnd)


def alpha_only_when_marked(alpha, cwnd, acked, marked, g=1 / 16):
    if marked:
        cwnd = _cut(cwnd, alpha)
        alpha = _avg(alpha, acked, marked, g)
    return alpha, cwnd


def ignores_g(alpha, cwnd, acked, marked, g=1 / 16):
    return right(alpha, cwnd, acked, marked, 1 / 16)


def unmarked_fraction(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, acked - marked, g), (_cut(cwnd, alpha) if marked else cwnd)


def whole_packets(alpha, cwnd, acked, marked, g=1 / 16):
    a, c = right(alpha, cwnd, acked, marked, g)
    return a, float(int(c))


def cwnd_first(alpha, cwnd, acked, marked, g=1 / 16):
    a, c = right(alpha, cwnd, acked, marked, g)
    return c, a


def netlabs_own_rule(alpha, cwnd, acked, marked, g=1 / 16):
    from netlab.check.ch6 import _rule as rule                 # an alias is caught too
    return rule(alpha, cwnd, acked, marked, g)


def floor_of_one(alpha, cwnd, acked, marked, g=1 / 16):
    return _avg(alpha, acked, marked, g), (max(cwnd * (1 - alpha / 2), 1.0) if marked else cwnd)


# (a student's wrong answer, the case its message names, words the message must hold)
MISTAKES = [
    (reno_halving, "every packet marked", "Reno's reaction"),
    (cut_with_the_new_alpha, "first marked window", "already updated with this window's marks"),
    (no_moving_average, "first marked window", "forgets the windows before"),
    (swapped_weights, "first marked window", "weights are swapped"),
    (cut_by_all_of_alpha, "first marked window", "twice as deep as DCTCP's"),
    (cut_without_marks, "no marks", "without marks (expected 40.00)"),
    (no_floor, "floor of 2 packets", "never cuts below 2 packets"),
    (floor_of_one, "floor of 2 packets", "never cuts below 2 packets"),
    (fraction_of_the_window, "fewer acked than the window", "not of the window"),
    (alpha_only_when_marked, "no marks", "updated at the end of every window"),
    (ignores_g, "g = 1/4", "as if g were 1/16"),
    (unmarked_fraction, "first marked window", "not of those that came back unmarked"),
    (whole_packets, "one mark in a hundred", "rounded to whole packets"),
    (cwnd_first, "first marked window", "return (alpha, cwnd)"),
    (netlabs_own_rule, "first marked window", "netlab's own DCTCP code"),
]

# a message may name terms and values, never the rule itself
FORMULA = re.compile(r"1\s*-\s*g|1\s*-\s*alpha|alpha\s*/\s*2|marked\s*/\s*acked|\(1 -|g\s*\*|\*\s*alpha")


@pytest.mark.parametrize("answer,case,words", MISTAKES, ids=[m[0].__name__ for m in MISTAKES])
def test_a_wrong_answer_is_rejected_with_its_case_and_term(answer, case, words):
    result = check.dctcp_update(answer)
    assert not result.passed, answer.__name__
    assert result.message.startswith(case) and words in result.message, result.message
    assert not FORMULA.search(result.message), result.message


@pytest.mark.parametrize("answer", [m[0] for m in MISTAKES if m[0] is not ignores_g],
                         ids=[m[0].__name__ for m in MISTAKES if m[0] is not ignores_g])
def test_a_wrong_answer_fails_the_hidden_variant_too(answer):
    from netlab.check import ch6
    original = ch6._cases, ch6._fabric_windows
    try:
        assert not variants.run_check("ch6", answer, seed=7).passed, answer.__name__
    finally:
        ch6._cases, ch6._fabric_windows = original


def test_ignoring_g_fails_a_variant_whose_windows_have_another_g():
    from netlab.check import ch6
    original = ch6._cases, ch6._fabric_windows
    try:
        result = variants.run_check("ch6", ignores_g, seed=7)
        assert not result.passed and "as if g were 1/16" in result.message, result.message
    finally:
        ch6._cases, ch6._fabric_windows = original


def test_state_kept_between_calls_is_caught_by_the_fabric_replay():
    calls = []

    def remembers(alpha, cwnd, acked, marked, g=1 / 16):          # right alone, wrong after 7 calls
        calls.append(1)
        a, c = right(alpha, cwnd, acked, marked, g)
        return (a * 0.99 if len(calls) > 7 else a), c
    result = check.dctcp_update(remembers)
    assert not result.passed and result.message.startswith("fabric run") and "window 1 " in result.message


def test_the_fabric_cuts_with_the_alpha_of_the_windows_before_as_linux_does():
    """Each ECN cut of the fabric's DCTCP sender uses the alpha of the last window that had ended
    (at the same ACK, the window's end comes first: tcp_in_ack_event runs before tcp_enter_cwr), and
    the cut is cwnd (1 - alpha/2) -- the independent reference is RFC 8257's order, not the check."""
    from netlab.fabric import ECN, Congestion, long_flows
    sender = long_flows(2, 10e9 / 8,
                        switch=Congestion("dctcp", ecn=ECN.dctcp(65 * 1500)), duration=0.004).flows[0].sender
    assert len(sender.cuts) >= 3
    for t, before, after, used in sender.cuts:
        done = [a for at, a in zip(sender.alpha_t, sender.alphas) if at <= t]
        assert used == (done[-1] if done else 1.0)
        assert after == pytest.approx(max(before * (1 - used / 2), 2.0))
