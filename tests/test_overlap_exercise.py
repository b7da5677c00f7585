"""Exercise 7: the untouched stub fails its check, the reference passes, a model without queueing fails."""
import netlab.check as check
from solutions import ch7_overlap


def test_ch7_stub_fails_and_reference_passes():
    stub = check.overlapped_step_time()
    assert not stub.passed and "not implemented" in stub.message
    check.overlapped_step_time(ch7_overlap.predict_overlapped_step).assert_passed()


def test_ch7_check_catches_buckets_that_do_not_queue():
    def no_queue(bucket_bytes, ready_s, compute_s, optimizer_s, ranks, bandwidth, latency):
        ends = [r + 2 * (ranks - 1) * (latency + n / ranks / bandwidth) for n, r in zip(bucket_bytes, ready_s)]
        return max([compute_s] + ends) + optimizer_s          # every bucket starts when ready: no queue
    assert not check.overlapped_step_time(no_queue).passed
