"""Each exercise: the untouched stub fails its check, the reference solution passes it."""
import netlab.check as check
from solutions import ch1_step_time


def test_ch1_stub_fails_and_reference_passes():
    stub = check.step_time()
    assert not stub.passed and "not implemented" in stub.message
    check.step_time(ch1_step_time.predict_step_time).assert_passed()


def test_ch1_check_catches_a_wrong_model():
    def bandwidth_only(compute_s, grad_bytes, ranks, bandwidth, latency):
        return compute_s + 2 * (ranks - 1) / ranks * grad_bytes / bandwidth    # forgot the latency
    result = check.step_time(bandwidth_only)
    assert not result.passed and any(row["ok"] == "no" for row in result.rows)
