"""Property tests of two small cores against references written here, obviously right and slow.

* ``Port.reserve`` (netlab/net/port.py): first fit with backfilling, against a plain list of every
  booking: the first start at or after `earliest` that overlaps no booking is `earliest` itself or
  the end of some booking, so trying those candidates in order is the whole algorithm.
* ``rank_plan`` (netlab/collectives/schedule.py): against a transfer-by-transfer reading of the
  steps, and, for the real all-reduce schedules, by replaying each step as every rank's plan of it
  sees it, on numpy buffers in one process, and comparing with the plain sum of the ranks' inputs.

Times are multiples of 1/4 so float sums are exact and "touching" intervals really touch. Not
covered here: zero-length messages (a port never books one) and the timing of the replayed plans.
"""
import numpy as np
from hypothesis import given, settings, strategies as st

from netlab import collectives
from netlab.collectives.schedule import Step, rank_plan
from netlab.net.port import PortCalendar

QUARTERS = st.integers(0, 80).map(lambda q: q / 4)
DURATIONS = st.integers(1, 24).map(lambda q: q / 4)


def first_fit(bookings, earliest, duration):
    """Reference: the earliest candidate start whose [start, start + duration) overlaps no booking."""
    candidates = sorted({earliest} | {end for _, end in bookings if end >= earliest})
    for start in candidates:
        if all(not (s < start + duration and start < e) for s, e in bookings):
            return start
    raise AssertionError("unreachable: the last booking's end is always free")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(QUARTERS, DURATIONS), min_size=1, max_size=25))
def test_port_reserve_is_first_fit_over_every_booking(requests):
    port, bookings = PortCalendar(), []
    for earliest, duration in requests:
        expected = first_fit(bookings, earliest, duration)
        assert port.reserve(earliest, duration) == expected
        bookings.append((expected, expected + duration))
        # the port's own intervals: sorted, disjoint, merged when they touch, covering exactly the bookings
        assert all(s < e for s, e in zip(port.starts, port.ends))
        assert all(e < s for e, s in zip(port.ends, port.starts[1:]))
        merged = []
        for s, e in sorted(bookings):
            if merged and merged[-1][1] == s:
                merged[-1][1] = e
            else:
                merged.append([s, e])
        assert [list(iv) for iv in zip(port.starts, port.ends)] == merged


@st.composite
def random_steps(draw):
    """A few steps of up to 8 transfers among up to 5 ranks, ranges possibly overlapping."""
    p = draw(st.integers(2, 5))
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        m = draw(st.integers(1, 8))
        ranks = st.lists(st.integers(0, p - 1), min_size=m, max_size=m)
        src, dst = draw(ranks), draw(ranks)
        offset = draw(st.lists(st.integers(0, 12), min_size=m, max_size=m))
        length = draw(st.lists(st.integers(1, 6), min_size=m, max_size=m))
        steps.append(Step(src, dst, offset, length, draw(st.booleans())))
    return p, steps


@settings(max_examples=120, deadline=None)
@given(random_steps())
def test_rank_plan_is_each_ranks_view_of_the_transfers(case):
    p, steps = case
    for rank in range(p):
        expected = []
        for step in steps:
            transfers = list(zip(step.src.tolist(), step.dst.tolist(), step.offset.tolist(), step.length.tolist()))
            sends = [(o, n, d) for s, d, o, n in transfers if s == rank]
            recvs = [(o, n, s) for s, d, o, n in transfers if d == rank]
            if not sends and not recvs:
                continue
            sent = {e for o, n, _ in sends for e in range(o, o + n)}
            expected.append((sends, recvs, step.reduce, sum(n for _, n, _ in recvs) if step.reduce else 0,
                             [not step.reduce and not sent & set(range(o, o + n)) for o, n, _ in recvs]))
        got = [(r.sends, r.recvs, r.reduce, r.scratch, r.in_place) for r in rank_plan(steps, rank)]
        assert got == expected


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["naive", "ring", "tree", "recursive_doubling", "halving_doubling"]),
       st.integers(2, 7), st.integers(0, 23), st.integers(0, 2**31 - 1))
def test_every_ranks_plan_of_an_allreduce_sums_the_inputs(algo, p, count, seed):
    steps = list(collectives.schedule("allreduce", algo, p, count))
    inputs = np.random.default_rng(seed).integers(-100, 100, size=(p, count))
    bufs = inputs.copy()
    for step in steps:                       # one step at a time: every rank's part of it, from rank_plan
        parts = [rank_plan([step], rank) for rank in range(p)]
        sent = {(rank, dst, o, n): bufs[rank, o:o + n].copy()
                for rank, part in enumerate(parts) for rs in part for o, n, dst in rs.sends}
        for rank, part in enumerate(parts):
            for rs in part:
                for o, n, src in rs.recvs:
                    data = sent.pop((src, rank, o, n))
                    bufs[rank, o:o + n] = bufs[rank, o:o + n] + data if rs.reduce else data
        assert not sent, "a send nobody received"
    assert (bufs == inputs.sum(axis=0)).all()
