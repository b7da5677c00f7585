"""Exercise 6: the untouched stub fails its check, the reference solution passes, wrong rules are caught."""
import netlab.check as check
from solutions import ch6_dctcp


def test_ch6_stub_fails_and_reference_passes():
    stub = check.dctcp_update()
    assert not stub.passed and "not implemented" in stub.message
    result = check.dctcp_update(ch6_dctcp.dctcp_update).assert_passed()
    assert len(result.rows) == 6 and all(row["ok"] == "yes" for row in result.rows)


def test_ch6_check_catches_reno_halving():
    def halve(alpha, cwnd, acked, marked, g=1 / 16):
        return (1 - g) * alpha + g * marked / acked, (cwnd / 2 if marked else cwnd)
    assert not check.dctcp_update(halve).passed


def test_ch6_check_catches_cutting_before_updating_alpha():
    def stale(alpha, cwnd, acked, marked, g=1 / 16):
        return (1 - g) * alpha + g * marked / acked, (max(cwnd * (1 - alpha / 2), 2.0) if marked else cwnd)
    assert not check.dctcp_update(stale).passed


def test_ch6_check_catches_a_wrong_average():
    def unweighted(alpha, cwnd, acked, marked, g=1 / 16):
        a = marked / acked
        return a, (max(cwnd * (1 - a / 2), 2.0) if marked else cwnd)
    result = check.dctcp_update(unweighted)
    assert not result.passed and any(row["ok"] == "no" for row in result.rows)
