"""Chapter 3's claims, each checked by running the chapter's experiment at its CI sizes (tests/claims.py).

References: BytePS's closed forms written out here (OSDI 2020, Table 1), bounds derived from the messages a
server's port carries, and, for the consistency models, bounds that hold for every seed tried (the chapter
runs seed 0), never numbers fitted to one run.
"""
import pytest

from claims import claim
from netlab import ps
from netlab.ps import baseline, hybrid

GBIT = 1e9 / 8
ALPHA = 5e-6
PARTITION = 16_384                                   # the default partition, bytes


def ps_formula(p, k, m, bw=GBIT):
    return max(m / bw, p * m / (k * bw))


@claim("ch3.ps-above-formula")
def test_push_pull_sits_5_to_15_percent_above_byteps_formula_by_the_servers_message_costs():
    for p, k in [(2, 1), (4, 1), (8, 1), (8, 2), (8, 4)]:
        r = ps.run_ps(workers=p, servers=k, mode="bsp", steps=1, width=512, bandwidth="1Gbit/s", latency="5us",
                      eval_every=0)
        m = r.setup["model_bytes"]
        f = ps_formula(p, k, m)
        chunks = r.config.smap.hottest_share() * m / PARTITION      # partitions on the hottest server
        fixed = p * chunks * ALPHA + p * PARTITION / GBIT             # a latency per message in, the last answers
        assert f + 0.5 * fixed < r.comm_s < f + 2 * fixed, (p, k, r.comm_s, f, fixed)
        assert 1.04 < r.comm_s / f < 1.15, (p, k, r.comm_s / f)


@claim("ch3.whole-ranges-twice")
def test_one_message_per_server_costs_2pm_over_b_twice_the_formula():
    for p in (2, 8):
        r = ps.run_ps(workers=p, servers=1, sharding="range", partition_bytes=0, mode="bsp", steps=1, width=512,
                      bandwidth="1Gbit/s", latency="5us", eval_every=0)
        m = r.setup["model_bytes"]
        assert r.comm_s == pytest.approx(2 * p * m / GBIT, rel=0.01)
        assert r.comm_s == pytest.approx(2 * ps_formula(p, 1, m), rel=0.01)


COMMON = dict(workers=8, servers=2, sharding="hash", bandwidth="10Gbit/s", steps=30, stragglers=2, slowdown=4.0,
              partition_bytes=32_768, eval_every=5)
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def modes():
    return {seed: {m: ps.run_ps(mode=m, staleness=2, seed=seed, **COMMON) for m in ("bsp", "ssp", "async")}
            for seed in SEEDS}


def _peak(staleness):
    return max(staleness, key=staleness.get)


@pytest.mark.slow           # the three modes at two seeds (fixture modes): about 9 s, in make test only
@claim("ch3.slack-wins-time")
def test_bsp_takes_a_longer_step_than_ssp_and_async_with_stragglers(modes):
    for seed, r in modes.items():
        assert r["bsp"].step_s > max(r["ssp"].step_s, r["async"].step_s), seed


@pytest.mark.slow           # the three modes at two seeds (fixture modes): about 9 s, in make test only
@claim("ch3.staleness-peak")
def test_at_one_pace_every_push_lands_p_minus_1_updates_late_and_stragglers_move_the_peak_below(modes):
    p = COMMON["workers"]
    even = ps.run_ps(mode="async", **dict(COMMON, stragglers=0))
    first = sum(v for s, v in even.staleness.items() if s < p - 1)       # the first step's reads, before any push
    assert _peak(even.staleness) == p - 1 and first < 0.05 * sum(even.staleness.values())
    for seed, r in modes.items():                         # stragglers: the peak below p - 1, above p / 2
        for m in ("ssp", "async"):
            assert p / 2 <= _peak(r[m].staleness) < p - 1, (seed, m)


@pytest.mark.slow           # the three modes at two seeds (fixture modes): about 9 s, in make test only
@claim("ch3.ssp-gap-bounded")
def test_ssp_never_lets_a_worker_more_than_s_steps_ahead_and_async_does(modes):
    for seed, r in modes.items():
        assert r["ssp"].max_gap <= 2 < r["async"].max_gap, seed
        assert max(r["ssp"].staleness) > 2                # updates, not steps: more than s is allowed


@pytest.mark.slow           # the three modes at two seeds (fixture modes): about 9 s, in make test only
@claim("ch3.accuracy-within-points")
def test_final_accuracies_of_the_three_modes_lie_within_five_points(modes):
    for seed, r in modes.items():
        acc = [x.accuracy for x in r.values()]
        assert max(acc) - min(acc) < 0.05, (seed, acc)


@pytest.mark.slow           # the three modes at two seeds (fixture modes): about 9 s, in make test only
@claim("ch3.ring-between")
def test_the_ring_all_reduces_step_lies_between_bsp_and_the_slack_modes(modes):
    ring = baseline.run_allreduce(**{k: v for k, v in COMMON.items() if k not in ("servers", "sharding",
                                                                                   "partition_bytes")})
    r = modes[0]
    assert max(r["ssp"].step_s, r["async"].step_s) < ring["step_s"] < r["bsp"].step_s


@claim("ch3.byteps-between")
def test_bytepss_hybrid_beats_the_ps_and_the_ring_and_stays_above_its_optimum():
    p, k = 8, 4
    mixed = hybrid.run_hybrid(workers=p, cpu_servers=k, bandwidth="1Gbit/s", latency="5us", width=512)
    plain = ps.run_ps(workers=p, servers=k, steps=1, width=512, bandwidth="1Gbit/s", latency="5us", eval_every=0)
    ring = baseline.run_allreduce(workers=p, steps=1, width=512, bandwidth="1Gbit/s", latency="5us", eval_every=0)
    m = mixed["model_bytes"]
    optimum = 2 * p * (p - 1) * m / ((p * p + k * p - 2 * k) * GBIT)      # BytePS's closed form
    assert optimum * 1.1 < mixed["comm_s"] < min(plain.comm_s, ring["comm_s"])    # "well above" the optimum
