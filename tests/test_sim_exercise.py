"""Exercise 5: the untouched stub fails its check, the reference solution passes, a wrong model is caught."""
import netlab.check as check
from solutions import ch5_max_min


def test_ch5_stub_fails_and_reference_passes():
    stub = check.max_min_rates()
    assert not stub.passed and "not implemented" in stub.message
    result = check.max_min_rates(ch5_max_min.max_min_rates).assert_passed()
    assert len(result.rows) == 7 and all(row["ok"] == "yes" for row in result.rows)


def test_ch5_check_catches_an_equal_split_of_the_first_link():
    def first_link_share(flows, capacity):               # fair on the access link only: ignores the fabric
        return [capacity[f[0]] / sum(f[0] in g for g in flows) for f in flows]
    result = check.max_min_rates(first_link_share)
    assert not result.passed and any(row["ok"] == "no" for row in result.rows)


def test_ch5_check_catches_freezing_only_one_level():
    def one_round(flows, capacity):                       # stops after the first full link
        load = {}
        for f in flows:
            for link in f:
                load[link] = load.get(link, 0) + 1
        level = min(capacity[link] / n for link, n in load.items())
        return [level] * len(flows)
    result = check.max_min_rates(one_round)
    assert not result.passed


def test_ch5_check_reports_a_wrong_shape_instead_of_raising():
    assert "expected" in check.max_min_rates(lambda flows, capacity: [1.0]).message
