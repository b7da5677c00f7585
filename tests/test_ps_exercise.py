"""Exercise 3 (SSP wait condition): the untouched stub fails its check, the reference passes it."""
import pytest

import netlab.check as check
from solutions import ch3_ssp_wait


@pytest.mark.slow
def test_ch3_stub_fails_and_reference_passes():
    stub = check.ssp_wait()
    assert not stub.passed and "not implemented" in stub.message
    check.ssp_wait(ch3_ssp_wait.ssp_ready).assert_passed()


def test_ch3_check_catches_an_off_by_one_and_a_condition_that_never_waits():
    off_by_one = check.ssp_wait(lambda step, clocks, s: not clocks or min(clocks) >= step - s)
    assert not off_by_one.passed and any(row["ok"] == "no" for row in off_by_one.rows)
    never_waits = check.ssp_wait(lambda step, clocks, s: True)
    assert not never_waits.passed


@pytest.mark.slow
def test_ch3_check_runs_the_answer_inside_real_servers():
    # right on every listed case (the slowest at clock 0 or 5), never waits once the slowest has pushed 6 steps
    def sneaky(step, clocks, s):
        return min(clocks) >= 6 or min(clocks) >= step + 1 - s
    result = check.ssp_wait(sneaky)
    assert not result.passed and [row for row in result.rows if row["step"] == "run" and row["ok"] == "no"]
