"""Each exercise: the untouched stub fails its check, the reference solution passes it."""
import pytest

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


from solutions import ch2_ring  # noqa: E402


def test_ch2_stub_fails_and_reference_passes():
    stub = check.ring_allreduce()
    assert not stub.passed and "not implemented" in stub.message
    result = check.ring_allreduce(ch2_ring.ring_allreduce).assert_passed()
    assert all(row["error"] == "0.0%" or float(row["error"][:-1]) < 1 for row in result.rows)


@pytest.mark.slow
def test_ch2_check_explains_what_is_wrong():
    def blocking_sends(comm, x):                 # every rank sends first: a deadlock
        p = comm.world_size
        for _ in range(p - 1):
            comm.send(x, (comm.rank + 1) % p)
            comm.recv(x, (comm.rank - 1) % p)

    def whole_vector(comm, x):                   # correct sums, but n bytes per message, not n/p
        import torch
        p = comm.world_size
        acc, buf = x.clone(), torch.empty_like(x)
        send = x.clone()
        for _ in range(p - 1):
            comm.sendrecv(send, (comm.rank + 1) % p, buf, (comm.rank - 1) % p)
            acc += buf
            send = buf.clone()
        x.copy_(acc)

    def forgot_allgather(comm, x):
        import torch
        p, r = comm.world_size, comm.rank
        chunks = x.tensor_split(p)
        for s in range(p - 1):
            buf = torch.empty_like(chunks[(r - s - 1) % p])
            comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
            chunks[(r - s - 1) % p].add_(buf)

    deadlock = check.ring_allreduce(blocking_sends, cases=[(3, 10)], timeout=4)
    assert not deadlock.passed and "deadlock" in deadlock.message and "waiting in send" in deadlock.message
    slow = check.ring_allreduce(whole_vector, cases=[(4, 4099)])
    assert not slow.passed and "messages" in slow.message          # p-1 messages of n, not 2(p-1) of n/p
    wrong = check.ring_allreduce(forgot_allgather, cases=[(4, 4099)])
    assert not wrong.passed and "all-gather phase is missing" in wrong.message
