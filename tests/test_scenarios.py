"""Find the bottleneck: each seeded scenario runs on real ranks and its culprit can be read off the analysis.

The diagnoser below uses only what a student has: the trace's analysis (``netlab.observe.analysis``) and the
public setup (stated NIC speed and latency, ring order, who is a server). If it names every hidden
culprit, the evidence is in the trace; the check must then accept the truth and reject each typical
wrong answer with its own hint.
"""
import json

import numpy as np
import pytest

from netlab.observe import analysis, scenarios
from netlab.check import ch7
from netlab.observe.scenarios import links
from netlab.net.network import network


def diagnose(trace, setup) -> dict | None:
    by_host = [p for p in analysis.pauses(trace) if p["by"] == "host"]
    if by_host:                                         # a host paused its own switch port: a pause storm
        return {"kind": "pfc_storm", "rank": max(by_host, key=lambda p: p["paused_s"])["rank"]}
    pairs = analysis.peer_links(trace, latency=setup["latency_s"])
    slow = {(p["src"], p["dst"]) for p in pairs if p["bandwidth_Bps"] < 0.7 * setup["bandwidth_Bps"]}
    if slow:
        common = set.intersection(*({a, b} for a, b in slow))
        if len(common) == 1:                            # every slow pair touches one rank: its NIC
            return {"kind": "slow_link", "rank": common.pop()}
        ring, leaf = setup["ring"], {setup["ring"][0]: 0}   # else: the ring changes leaf at each slow pair
        for a, b in zip(ring, ring[1:]):
            leaf[b] = leaf[a] ^ ((a, b) in slow)
        return {"kind": "spine", "leaf": sorted(r for r in leaf if leaf[r] == leaf[0])}
    if setup["workload"] == "ps":
        inbound = {s: sum(p["bytes"] for p in pairs if p["dst"] == s) for s in setup["servers"]}
        top = max(inbound, key=inbound.get)
        if inbound[top] > 2 * sorted(inbound.values())[-2]:
            return {"kind": "hot_shard", "rank": top}
        return None
    compute = [row["compute_s"] for row in analysis.breakdown(trace)]
    top = max(range(len(compute)), key=compute.__getitem__)
    if compute[top] > 1.2 * sorted(compute)[-2]:
        assert analysis.straggler(trace)["rank"] == top          # HTA's rule agrees: last in, shortest inside
        return {"kind": "straggler", "rank": top}
    latency = sum(p["messages"] for p in pairs) * setup["latency_s"] / sum(p["busy_s"] for p in pairs)
    if latency > 0.5 and len(analysis.collectives_of(trace, 0)) > 1:
        return {"kind": "small_bucket"}
    return None


def same(found, truth) -> bool:
    if found is None or found["kind"] != truth["kind"]:
        return False
    if truth["kind"] == "spine":
        return found["leaf"] in (truth["leaf"], truth["other"])
    return found.get("rank") == truth.get("rank")


SEEDS = (0, 2, 3)


@pytest.mark.parametrize("name", scenarios.KINDS)
def test_the_evidence_names_every_culprit(name):
    seen = set()
    for seed in SEEDS:
        out = scenarios.scenario(name, seed)
        assert out.trace.virtual and out.trace.world_size == out.setup["ranks"]
        found = diagnose(out.trace, out.setup)
        assert same(found, out.truth), (seed, found, out.truth, out.plan.knobs)
        seen.add((out.setup["workload"], json.dumps(out.truth, sort_keys=True)))
    if name == "slow_link":                 # both workloads, different ranks
        assert {w for w, _ in seen} == {"allreduce", "ps"} and len(seen) == len(SEEDS)
    if name in ("straggler", "hot_shard", "spine"):
        assert len(seen) >= 2               # the seed moves the culprit


def _allreduce_span(trace):
    regions = [e for r in range(trace.world_size) for e in analysis.collectives_of(trace, r)]
    return max(e.end for e in regions) - min(e.start for e in regions)


def test_a_pause_storm_spreads_one_hop_and_slows_the_step_by_what_its_pause_fraction_implies():
    """The stalled host's port is paused on its schedule (closed form), the NIC that feeds it is paused by the
    switch, the healthy fabric pauses nothing, and the all-reduce takes at least R / ((1 - f) B) - f P."""
    import netlab
    from netlab.dataparallel import overlap
    from netlab.net.presets import device
    out = scenarios.scenario("pfc_storm", 2)
    rank, f, period = out.truth["rank"], out.plan.knobs["fraction"], out.plan.knobs["period"]
    clean = netlab.run(overlap.overlapped_step, ranks=scenarios.RANKS, network=scenarios.storm_network(),
                        device=device("cpu-core"), bucket_bytes=scenarios.BIG_BUCKET, overlap=True,
                        **scenarios.SHAPE).trace
    assert analysis.pauses(clean) == []
    rows = {p["port"]: p for p in analysis.pauses(out.trace)}
    end = out.trace.makespan                          # the schedule: paused on [kP, kP + fP) from t = 0
    want = sum(max(0.0, min(k * period + f * period, end) - k * period) for k in range(int(end / period) + 1))
    mine = rows.pop(f"switch->rank{rank}")
    assert mine["by"] == "host" and mine["paused_s"] == pytest.approx(want, rel=1e-6)
    feeder = (rank - 1) % scenarios.RANKS             # the ring's rank that sends to the stalled host
    assert set(rows) == {f"rank{feeder}.nic"} and rows[f"rank{feeder}.nic"]["by"] == "switch"
    assert rows[f"rank{feeder}.nic"]["paused_s"] > 0
    B = out.setup["bandwidth_Bps"]
    R = sum(e.bytes for e in out.trace.of(rank, "recv"))
    assert R == sum(e.bytes for e in clean.of(rank, "recv"))     # the same all-reduce, only slower
    bound = R / ((1 - f) * B) - f * period            # its port carries at most (1 - f) B, but for one period
    assert _allreduce_span(out.trace) >= bound
    assert out.trace.makespan - clean.makespan >= bound - _allreduce_span(clean) > 0.5 * R / B


def test_a_storm_needs_pfc_and_a_rank_that_exists():
    import netlab
    from netlab.dataparallel import overlap
    from netlab.fabric.congestion import Congestion
    from netlab.fabric.storm import Storm
    with pytest.raises(ValueError, match="^storm:"):
        Congestion("ideal", buffer="128K", storm=Storm(0, 0.5))
    with pytest.raises(ValueError, match="^storm-fraction:"):
        Storm(0, 1.5)
    with pytest.raises(ValueError, match="^storm-rank:"):
        Storm(-1, 0.5)
    with pytest.raises(ValueError, match="^storm-rank:"):
        netlab.run(overlap.overlapped_step, ranks=2, network=scenarios.storm_network(Storm(5, 0.5)))


def test_slow_pairs_run_at_the_closed_form_speed():
    """Each message holds the sender's port alpha + n/B: the slow NIC's pairs at fraction * B, the rest at B."""
    out = scenarios.scenario("slow_link", 2)
    rank, fraction = out.truth["rank"], out.plan.knobs["fraction"]
    bw, alpha = out.setup["bandwidth_Bps"], out.setup["latency_s"]
    for p in analysis.peer_links(out.trace):                 # no latency given: the least-squares line
        want = bw * fraction if rank in (p["src"], p["dst"]) else bw
        assert p["bandwidth_Bps"] == pytest.approx(want, rel=1e-6) and p["alpha_s"] == pytest.approx(alpha, rel=1e-6)
        assert p["busy_s"] == pytest.approx(p["messages"] * alpha + p["bytes"] / want, rel=1e-9)


def test_the_spine_share_is_the_max_min_fair_share():
    """Cross-leaf pairs get what max-min fair sharing (the flow simulator's) gives a ring step's flows."""
    from netlab.sim import max_min_rates
    base, ratio = network("10Gbit/s", "50us"), 4.0
    B = base.nic.bandwidth
    for leaf in ([0, 0, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1]):
        net = links.spine(base, leaf, ratio)
        paths = []
        for r in range(4):
            a, b = r, (r + 1) % 4
            path = [f"up{a}", f"down{b}"]
            if leaf[a] != leaf[b]:
                path.append(f"uplink{leaf[a]}")
            paths.append(path)
        capacity = {**{f"up{r}": B for r in range(4)}, **{f"down{r}": B for r in range(4)},
                    **{f"uplink{x}": 2 * B / ratio for x in (0, 1)}}
        rates = max_min_rates(paths, capacity)
        for r in range(4):
            assert net.link(r, (r + 1) % 4).bandwidth == pytest.approx(rates[r], rel=1e-12)


def test_the_cli_json_carries_the_links(tmp_path, capsys):
    from netlab.cli import main
    out = scenarios.scenario("slow_link", 2)
    path = out.trace.save(str(tmp_path / "t.json"))
    assert main(["analyze", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    slow = [(p["src"], p["dst"]) for p in report["links"] if p["bandwidth_Bps"] < 0.7 * out.setup["bandwidth_Bps"]]
    assert slow and all(out.truth["rank"] in pair for pair in slow)


def test_the_cli_text_names_the_port_a_host_paused(tmp_path, capsys):
    from netlab.cli import main
    out = scenarios.scenario("pfc_storm", 2)
    path = out.trace.save(str(tmp_path / "t.json"))
    assert main(["analyze", path]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "PFC pause" in ln]
    assert [ln for ln in lines if ln.endswith("by the host")] == \
        [ln for ln in lines if f"switch->rank{out.truth['rank']} " in ln]
    assert len(lines) == len(analysis.pauses(out.trace)) == 2


@pytest.fixture(autouse=True)
def _answer_log(tmp_path, monkeypatch):
    """Answers go to this test's own log, never the user's ~/.netlab."""
    monkeypatch.setenv("NETLAB_ANSWERS", str(tmp_path / "answers.json"))


def first(answer, seed, _n=[0]):
    """``find_bottleneck`` on an answer log of its own: every call is a seed's first answer."""
    import os
    import tempfile
    _n[0] += 1
    return ch7.find_bottleneck(answer, seed=seed, answers=os.path.join(tempfile.mkdtemp(), f"{_n[0]}.json"))


def _answer(truth):
    if truth["kind"] == "spine":
        return {"kind": "spine", "leaf": truth["other"]}                # either leaf is right
    return dict(truth)


def _seed_of_kind(kind, start=0):
    return next(s for s in range(start, 500) if scenarios.pick(s) == kind)


def test_the_check_accepts_the_truth_and_explains_each_wrong_kind():
    hints = {}
    for kind in scenarios.KINDS:
        seed = _seed_of_kind(kind)
        truth = scenarios.plan(kind, seed).truth
        assert first(_answer(truth), seed).passed
        for wrong in scenarios.KINDS:
            if wrong == kind:
                continue
            res = first({"kind": wrong, "rank": 0, "leaf": [0, 1]}, seed)
            assert not res.passed and res.message
            hints.setdefault(wrong, set()).add(res.message)
            if "rank" in truth:                               # a hint never gives the culprit away
                assert f"rank {truth['rank']}" not in res.message
    assert all(hints[k] for k in scenarios.KINDS)
    assert len({m for ms in hints.values() for m in ms}) >= len(scenarios.KINDS)     # one hint per wrong kind


def test_the_check_names_typical_mistakes_and_unfinished_answers():
    seed = _seed_of_kind("straggler")
    truth = scenarios.plan("straggler", seed).truth
    victim = (truth["rank"] + 1) % scenarios.RANKS
    res = first({"kind": "straggler", "rank": victim}, seed)
    assert not res.passed and "waits inside the all-reduce" in res.message
    assert "name the rank" in first("straggler", seed).message
    assert first({"kind": "straggler", "rank": np.int64(truth["rank"])}, seed).passed
    assert "not answered" in first(None, seed).message
    assert "kind must be one of" in first({"kind": "dns"}, seed).message
    spine = _seed_of_kind("spine")
    t = scenarios.plan("spine", spine).truth
    assert first(("spine", t["leaf"]), spine).passed
    mixed = [t["leaf"][0], t["other"][0]]
    assert not first({"kind": "spine", "leaf": mixed}, spine).passed
    slow = _seed_of_kind("slow_link")
    assert "do not all touch one rank" in first({"kind": "slow_link", "rank": 0}, spine).message
    assert "share one rank" in first({"kind": "spine", "leaf": [0, 1]}, slow).message


def test_the_check_is_reached_from_netlab_check():
    import netlab.check
    assert netlab.check.find_bottleneck is ch7.find_bottleneck


def test_seeds_are_stable_and_differ():
    a, b = scenarios.plan(scenarios.pick(0), 0), scenarios.plan(scenarios.pick(1), 1)
    assert scenarios.plan(scenarios.pick(0), 0) == a                  # the same seed, the same culprit
    assert (a.name, a.truth) != (b.name, b.truth)
    assert {scenarios.pick(s) for s in range(40)} == set(scenarios.KINDS)
    name = "Ada Lovelace 2024-017"
    assert scenarios.check_seed(name) == scenarios.seed_of(name) == scenarios.seed_of(f" {name} ")
    assert first(_answer(scenarios.plan(scenarios.pick(name), name).truth), name).passed


def test_bad_input():
    with pytest.raises(ValueError, match="^name:"):
        scenarios.plan("dns", 0)
    with pytest.raises(ValueError, match="^seed:"):
        scenarios.plan("spine", -1)
    with pytest.raises(ValueError, match="^seed:"):
        scenarios.seed_of("  ")
    with pytest.raises(ValueError, match="^seed:"):
        ch7.find_bottleneck("spine", seed=1.5)
    with pytest.raises(ValueError, match="^latency:"):
        analysis.peer_links(_toy(), latency=-1)


def _toy():
    from netlab.runtime.comm import Event
    from netlab.runtime.trace import Trace
    return Trace([Event(0, "send", 1, 100, 0.0, 1.0)], [1.0, 1.0], True)


def test_peer_matrix_draws_each_pairs_speed_and_bytes():
    from matplotlib.figure import Figure
    from netlab.figures.trace import peer_matrix
    out = scenarios.scenario("spine", 0)
    fig = peer_matrix(out.trace, fig=Figure(), latency=out.setup["latency_s"], bandwidth=out.setup["bandwidth_Bps"])
    speed, volume = (ax.images[0].get_array() for ax in fig.axes[:2])
    for p in analysis.peer_links(out.trace, latency=out.setup["latency_s"]):
        assert speed[p["src"], p["dst"]] == pytest.approx(p["bandwidth_Bps"] / out.setup["bandwidth_Bps"])
        assert volume[p["src"], p["dst"]] == pytest.approx(p["bytes"] / 1e3)
    leaf = out.plan.knobs["leaf"]                     # the cross-leaf hops are the slow cells, at 2B/(ratio*m)
    slow = {(r, (r + 1) % 4) for r in range(4) if leaf[r] != leaf[(r + 1) % 4]}
    assert {(i, j) for i in range(4) for j in range(4) if speed[i, j] < 0.7} == slow
