"""Exercise 2 (ring all-reduce): typical wrong answers, written as a student would, all fail on real ranks, each
with a message naming the phase (or the standard) that is wrong and what the chunk holds; right answers pass."""
import pytest
import torch

import netlab.check as check
from solutions import ch2_ring

right = ch2_ring.ring_allreduce


def forgot_allgather(comm, x):
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)


def allgather_adds(comm, x):                    # the all-gather adds the finished chunk instead of keeping it
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s) % p])
        comm.sendrecv(chunks[(r - s + 1) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s) % p].add_(buf)


def allgather_wrong_chunk(comm, x):             # the all-gather passes on the chunk of the reduce-scatter's schedule
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)
    for s in range(p - 1):
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, chunks[(r - s - 1) % p], (r - 1) % p)


def reduce_scatter_one_step_short(comm, x):     # p - 2 reduce-scatter steps: no chunk is finished
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(max(p - 2, 0)):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)
    for s in range(p):
        comm.sendrecv(chunks[(r - s + 1) % p], (r + 1) % p, chunks[(r - s) % p], (r - 1) % p)


def wrong_chunk(comm, x):                       # adds the chunk it received into the chunk it just sent
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(2 * (p - 1)):
        buf = torch.empty_like(chunks[(r - s) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s) % p].add_(buf[:chunks[(r - s) % p].numel()])


def copies_not_views(comm, x):                  # the chunks are copies: x never changes
    p, r = comm.world_size, comm.rank
    chunks = [c.clone() for c in x.tensor_split(p)]
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p] = chunks[(r - s - 1) % p] + buf
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s) % p])
        comm.sendrecv(chunks[(r - s + 1) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s) % p] = buf


def floor_chunks(comm, x):                      # chunks of n // p elements: the remainder is never summed
    p, r = comm.world_size, comm.rank
    size = x.numel() // p
    chunks = [x[i * size:(i + 1) * size] for i in range(p)]
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        comm.sendrecv(chunks[(r - s) % p], (r + 1) % p, buf, (r - 1) % p)
        chunks[(r - s - 1) % p].add_(buf)
    for s in range(p - 1):
        comm.sendrecv(chunks[(r - s + 1) % p], (r + 1) % p, chunks[(r - s) % p], (r - 1) % p)


def whole_vector(comm, x):                      # right sums from p-1 messages of n elements, not 2(p-1) of n/p
    p = comm.world_size
    acc, buf, send = x.clone(), torch.empty_like(x), x.clone()
    for _ in range(p - 1):
        comm.sendrecv(send, (comm.rank + 1) % p, buf, (comm.rank - 1) % p)
        acc += buf
        send = buf.clone()
    x.copy_(acc)


def two_ranks_only(comm, x):                    # swap with the neighbour and add: right on 2 ranks only
    buf = torch.empty_like(x)
    comm.sendrecv(x.clone(), (comm.rank + 1) % comm.world_size, buf, (comm.rank - 1) % comm.world_size)
    x.add_(buf)


def through_rank_0(comm, x):                    # gather to rank 0, sum, send back: right sums, not a ring
    p = comm.world_size
    if comm.rank == 0:
        buf = torch.empty_like(x)
        for src in range(1, p):
            comm.recv(buf, src)
            x.add_(buf)
        for dst in range(1, p):
            comm.send(x, dst)
    else:
        comm.send(x, 0)
        comm.recv(x, 0)


def even_odd_blocking(comm, x):                 # no deadlock, right sums and messages, but the sends queue up
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)

    def exchange(out, into):
        if r % 2 == 0:
            comm.send(out, (r + 1) % p)
            comm.recv(into, (r - 1) % p)
        else:
            comm.recv(into, (r - 1) % p)
            comm.send(out, (r + 1) % p)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s - 1) % p])
        exchange(chunks[(r - s) % p].clone(), buf)
        chunks[(r - s - 1) % p].add_(buf)
    for s in range(p - 1):
        buf = torch.empty_like(chunks[(r - s) % p])
        exchange(chunks[(r - s + 1) % p].clone(), buf)
        chunks[(r - s) % p].copy_(buf)


def calls_netlab(comm, x):
    from netlab import collectives
    return collectives.allreduce(comm, x, algo="ring")


def calls_netlab_aliased(comm, x):
    from netlab.collectives import allreduce as mine
    return mine(comm, x, algo="ring")


def calls_torch(comm, x):
    import torch.distributed as dist
    dist.all_reduce(x, group=comm.group)


WRONG = [
    (forgot_allgather, "all-gather phase is missing"),
    (allgather_adds, "twice"),
    (allgather_wrong_chunk, "the all-gather overwrote that finished chunk"),
    (reduce_scatter_one_step_short, "the reduce-scatter did not finish"),
    (wrong_chunk, "no sum of the ranks' data"),
    (copies_not_views, "only its own data"),
    (floor_chunks, "cover all"),
    (whole_vector, "whole vector"),
    (two_ranks_only, "whole vector"),
    (through_rank_0, "a ring sends"),
    (even_odd_blocking, "did not travel at the same time"),
    (calls_netlab, "netlab.collectives"),
    (calls_netlab_aliased, "netlab.collectives.allreduce"),
    (calls_torch, "torch.distributed.all_reduce"),
]


@pytest.mark.slow
@pytest.mark.parametrize("answer,words", WRONG, ids=[w[0].__name__ for w in WRONG])
def test_every_typical_wrong_answer_is_rejected_and_told_what_is_wrong(answer, words):
    result = check.ring_allreduce(answer)
    assert not result.passed, result
    assert words in result.message, result.message
    assert "(r - s" not in result.message and "mod p" not in result.message         # never the schedule


def test_the_all_gather_bug_is_told_about_the_all_gather():
    result = check.ring_allreduce(allgather_wrong_chunk, cases=[(4, 4099)])
    assert not result.passed and "all-gather" in result.message and "reduce-scatter worked" in result.message


def test_calling_the_package_fails_saying_so():
    for answer in (calls_netlab, calls_torch):
        result = check.ring_allreduce(answer, cases=[(3, 7)])
        assert not result.passed and "write it yourself" in result.message, result.message


def chunked_by_hand(comm, x):
    """Right, written another way: isend/irecv and an explicit index table."""
    p, r = comm.world_size, comm.rank
    chunks = x.tensor_split(p)
    for s in range(p - 1):
        send_i, recv_i = (r - s) % p, (r - s - 1) % p
        buf = torch.empty_like(chunks[recv_i])
        a = comm.isend(chunks[send_i].clone(), (r + 1) % p)
        b = comm.irecv(buf, (r - 1) % p)
        comm.wait(a, b)
        chunks[recv_i].add_(buf)
    for s in range(p - 1):
        send_i, recv_i = (r + 1 - s) % p, (r - s) % p
        buf = torch.empty_like(chunks[recv_i])
        comm.sendrecv(chunks[send_i], (r + 1) % p, buf, (r - 1) % p)
        chunks[recv_i].copy_(buf)
    return x


@pytest.mark.parametrize("answer", [right, chunked_by_hand])
def test_right_answers_pass(answer):
    check.ring_allreduce(answer).assert_passed()
