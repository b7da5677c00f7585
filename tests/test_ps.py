"""Parameter servers on real ranks: shard maps, BSP against a single process, SSP's bound, sparse rows,
elastic workers, saved servers, the BytePS summation service, and the CLI."""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch.nn.utils import parameters_to_vector

from netlab import data, ps
from netlab.dataparallel import train
from netlab.ps import elastic, hybrid, sparse
from netlab.ps.sharding import djb2
from claims import claim


# ---- shard maps --------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(numel=st.integers(1, 5000), servers=st.integers(1, 9), scheme=st.sampled_from(["range", "hash"]),
       partition=st.sampled_from([0, 4, 64, 400, 4096]))
def test_every_element_has_exactly_one_server(numel, servers, scheme, partition):
    if scheme == "hash" and partition == 0:
        partition = 4096
    m = ps.shard_map(numel, servers, scheme, partition)
    covered = np.zeros(numel, dtype=int)
    for c in m.chunks:
        covered[c.offset:c.offset + c.length] += 1
        assert 0 <= c.server < servers
    assert (covered == 1).all()
    assert sorted(c.index for c in m.send_order()) == list(range(len(m.chunks)))
    assert sum(m.elements_per_server()) == numel


def test_range_is_contiguous_and_even_and_hash_follows_byteps_djb2():
    m = ps.shard_map(1000, 3, "range", 0)
    assert [(c.offset, c.length, c.server) for c in m.chunks] == [(0, 334, 0), (334, 333, 1), (667, 333, 2)]
    assert djb2(0) == 5381 * 33 + ord("0") and djb2(12) == (5381 * 33 + ord("1")) * 33 + ord("2")
    h = ps.shard_map(10_000, 3, "hash", 400)                       # 100-element partitions
    assert all(c.server == djb2(c.index) % 3 and c.length == 100 for c in h.chunks)
    assert [c.server for c in h.send_order()[:6]] == [0, 1, 2, 0, 1, 2]  # round robin over servers
    assert ps.shard_map(7, 2, "range", 0).owner(4) == 1


def test_mixed_map_gives_the_cpu_servers_byteps_share():
    x = ps.mixed_fraction(8, 2)
    assert x == pytest.approx(2 * 2 * 7 / (8 * 10 - 4))
    m = ps.mixed_map(400_000, 8, 2, 4096)
    assert sum(m.elements_per_server()[:2]) / m.numel == pytest.approx(x, abs=0.01)
    assert ps.mixed_map(100_000, 4, 0, 4096, fraction=0.0).elements_per_server()[0] > 0


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(mode="eventual"), "mode"), (dict(mode="ssp", staleness=-1), "staleness"),
    (dict(workers=14, servers=3), "workers"), (dict(sharding="modulo"), "sharding"),
    (dict(partition_bytes=-8), "partition_bytes"), (dict(slowdown=0.5), "slowdown"),
    (dict(servers=0), "servers"), (dict(straggle="sometimes"), "straggle"),
    (dict(mode="async", membership=ps.Membership(4, 50, join={3: 5})), "membership"),
])
def test_bad_settings_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=f"^{parameter}:"):
        ps.make_config(**kwargs)


# ---- training ------------------------------------------------------------------------------------
def reference(steps, width, batch, lr, momentum, membership, seed=0):
    """A single process: each step, the summed gradient of the step's members, then momentum SGD."""
    model = train.make_model(width, 2, seed)
    x, y = data.load("train")
    velocity = [torch.zeros_like(p) for p in model.parameters()]
    for t in range(steps):
        model.zero_grad()
        members = membership.members(t)
        for i, _ in enumerate(members):
            idx = train.batch_indices(t, i, len(members), batch, n=len(y), seed=seed)
            (F.cross_entropy(model(x[idx]), y[idx], reduction="sum") / (len(members) * batch)).backward()
        with torch.no_grad():
            for v, p in zip(velocity, model.parameters()):
                v.mul_(momentum).add_(p.grad)
                p -= lr * v
    return parameters_to_vector(model.parameters()).detach()


def test_bsp_trains_exactly_the_single_process_model():
    r = ps.run_ps(workers=4, servers=3, sharding="hash", mode="bsp", steps=10, width=64, batch=16, lr=0.1,
                  momentum=0.9, partition_bytes=2048)
    ref = reference(10, 64, 16, 0.1, 0.9, ps.Membership(4, 10))
    torch.testing.assert_close(torch.from_numpy(ps.assemble(r)), ref, rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.from_numpy(r.workers[0]["params"]), ref, rtol=0, atol=1e-6)   # what worker 0 pulled
    assert r.staleness == {0: 10 * 4 * r.setup["chunks"]}


def test_ssp_with_bound_zero_is_bsp_with_per_push_updates():
    r = ps.run_ps(workers=4, servers=2, mode="ssp", staleness=0, steps=8, width=64, batch=16, lr=0.2,
                  partition_bytes=4096)
    ref = reference(8, 64, 16, 0.2, 0.0, ps.Membership(4, 8))
    torch.testing.assert_close(torch.from_numpy(ps.assemble(r)), ref, rtol=0, atol=1e-6)
    assert r.max_gap == 0


def test_without_an_emulated_network_the_wall_clock_runs_the_same_bsp_model():
    kw = dict(workers=3, servers=2, sharding="hash", steps=5, width=64, partition_bytes=4096)
    wall, virtual = ps.run_ps(emulate=False, **kw), ps.run_ps(**kw)
    assert not wall.trace.virtual and wall.setup["clock"] == "wall"
    assert (ps.assemble(wall) == ps.assemble(virtual)).all()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bsp", "ssp"])
def test_training_on_the_digits_converges(mode):
    r = ps.run_ps(workers=4, servers=2, sharding="hash", mode=mode, staleness=2, steps=150, stragglers=1,
                  slowdown=3.0, partition_bytes=32_768, eval_every=50)
    assert r.accuracy >= 0.9                                       # chance is 0.1
    assert r.history["accuracy"][-1] > r.history["accuracy"][0]


def mean(hist):
    return sum(k * v for k, v in hist.items()) / sum(hist.values())


@pytest.mark.slow
def test_staleness_bound_holds_and_orders_the_modes():
    kw = dict(workers=6, servers=2, sharding="hash", steps=12, stragglers=1, slowdown=4.0, width=64,
              partition_bytes=4096, eval_every=0)
    fixed = {s: ps.run_ps(mode="ssp", staleness=s, straggle="fixed", **kw) for s in (1, 3)}
    free = ps.run_ps(mode="async", straggle="fixed", **kw)
    for s, r in fixed.items():
        assert 0 < r.max_gap <= s                                # never more than s steps ahead
    assert free.max_gap > 3                                      # nothing holds an asynchronous worker back
    assert mean(free.staleness) > mean(fixed[3].staleness) > mean(fixed[1].staleness)
    # stragglers that change every step: slack lets the others through, BSP waits for each one
    sync, ssp1, asyn = (ps.run_ps(mode=m, staleness=1, **kw) for m in ("bsp", "ssp", "async"))
    assert set(sync.staleness) == {0}
    assert asyn.step_s <= ssp1.step_s < sync.step_s


# ---- elasticity and saved state ----------------------------------------------------------------
def test_workers_leave_and_join_without_losing_an_update():
    r = elastic.run_elastic(workers=5, servers=2, steps=10, leave={1: 3}, join={4: 6}, width=64, batch=16, lr=0.2,
                            partition_bytes=4096)
    assert [w["steps"] for w in r.workers] == [10, 4, 10, 10, 4]
    lost = elastic.lost_updates(r)
    assert lost["max_abs_difference"] < 1e-6 and lost["weights_vs_init_minus_lr_sum"] < 1e-6
    assert lost["pushes"] == 38
    ref = reference(10, 64, 16, 0.2, 0.0, ps.Membership(5, 10, {1: 3}, {4: 6}))
    torch.testing.assert_close(torch.from_numpy(ps.assemble(r)), ref, rtol=0, atol=1e-6)


def test_a_run_resumed_from_saved_servers_continues_exactly():
    kw = dict(workers=3, servers=2, width=64, batch=16, lr=0.1, momentum=0.9, sharding="hash", partition_bytes=4096)
    whole = ps.run_ps(steps=8, **kw)
    saved = elastic.save(ps.run_ps(steps=4, **kw))
    resumed = elastic.resume(saved, steps=8, start=4, **kw)
    assert (ps.assemble(whole) == ps.assemble(resumed)).all()
    assert whole.accuracy == resumed.accuracy


# ---- sparse rows ---------------------------------------------------------------------------------
def sparse_reference(cfg):
    table, targets = sparse.initial_table(cfg)
    for t in range(cfg.steps):
        total = torch.zeros_like(table)
        for w in range(cfg.workers):
            ids = torch.from_numpy(sparse.lookups(cfg, w, t))
            total.index_add_(0, ids, (table[ids] - targets[ids]) / (cfg.workers * cfg.lookups))
        table -= cfg.lr * total
    return table


@claim("ch3.hashing-spreads-rows")
def test_zipf_rows_make_a_hot_shard_under_ranges_and_hashing_spreads_it():
    runs = {pl: sparse.run_sparse(workers=8, servers=4, placement=pl, hot=32 if pl == "replicate" else 0, steps=2)
            for pl in ("range", "hash", "replicate")}
    assert runs["range"]["hottest_share"] > 0.6                 # rows 0..R/4 hold the popular ids
    assert runs["hash"]["hottest_share"] < 0.3
    assert runs["replicate"]["hottest_share"] < 0.3
    ref = sparse_reference(sparse.SparseConfig(workers=8, servers=4, steps=2))
    for r in runs.values():
        torch.testing.assert_close(torch.from_numpy(r["table"]), ref, rtol=0, atol=1e-6)   # every placement trains the same rows
    assert sum(runs["replicate"]["server_bytes"]) > sum(runs["hash"]["server_bytes"])   # keeping copies in sync



@pytest.mark.parametrize("settings, name", [(dict(placement="random"), "placement"), (dict(rows=1), "rows"),
                                            (dict(zipf=5), "zipf"), (dict(lookups=0), "lookups"),
                                            (dict(steps=1.5), "steps"), (dict(hot=-1), "hot")])
def test_a_bad_embedding_setting_names_the_field_before_any_rank_starts(settings, name, monkeypatch):
    from netlab.runtime import shared

    def tripwire(*args, **kw):
        raise AssertionError("a rank pool was started")
    monkeypatch.setattr(shared, "run_on_pool", tripwire)
    with pytest.raises(ValueError, match=f"^{name}:"):
        sparse.run_sparse(**settings)


def test_hot_rows_are_replicated_only_under_replicate():
    assert sparse.SparseConfig(placement="hash", hot=32).hot == 0
    assert sparse.SparseConfig(placement="replicate", hot=32).hot == 32

# ---- BytePS summation service --------------------------------------------------------------------
@pytest.mark.parametrize("cpu_servers, fraction", [(2, None), (0, 0.0)])
def test_summation_service_trains_the_all_reduce_model(cpu_servers, fraction):
    r = hybrid.run_hybrid(workers=4, cpu_servers=cpu_servers, fraction=fraction, steps=8, width=64, batch=16, lr=0.1,
                          momentum=0.9, partition_bytes=2048)
    torch.testing.assert_close(torch.from_numpy(r["params"]), reference(8, 64, 16, 0.1, 0.9, ps.Membership(4, 8)), rtol=0, atol=1e-6)


def test_colocated_layout_every_rank_is_worker_and_server():
    r = ps.run_ps(workers=4, colocated=True, steps=6, width=64, batch=16, lr=0.1, momentum=0.9, partition_bytes=2048)
    assert r.setup["servers"] == 4 and len(r.server_bytes) == 4
    torch.testing.assert_close(torch.from_numpy(r.workers[0]["params"]), reference(6, 64, 16, 0.1, 0.9, ps.Membership(4, 6)),
                               rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="^colocated:"):
        ps.run_ps(workers=4, colocated=True, mode="async")


# ---- command line --------------------------------------------------------------------------------
def test_cli_prints_step_time_server_bytes_and_accuracy(run_cli):
    code, stdout, stderr = run_cli("ps", "--workers", "4", "--servers", "2", "--sharding", "hash", "--mode", "ssp",
                                   "--staleness", "2", "--steps", "12", "--width", "64", "--json")
    assert code == 0, stderr
    d = json.loads(stdout)
    assert d["step_s"] > 0 and 0 <= d["accuracy"] <= 1
    assert len(d["server_bytes"]) == 2 and all(b > 0 for b in d["server_bytes"])
    assert d["max_gap"] <= 2


@pytest.mark.parametrize("argv, parameter", [(["--workers", "15", "--servers", "2"], "workers"),
                                             (["--mode", "ssp", "--staleness", "-2"], "staleness"),
                                             (["--sharding", "round-robin"], "sharding")])
def test_cli_bad_values_give_one_line_and_exit_2(argv, parameter, run_cli):
    code, _, stderr = run_cli("ps", *argv)
    assert code == 2
    assert stderr.strip().count("\n") == 0 and f"error: {parameter}:" in stderr


def test_panel_runs_headless_and_follows_its_controls():
    from netlab.ui.ch3 import PSPanel
    panel = PSPanel(workers=3, servers=1, steps=4, stragglers=1)
    assert panel.last.setup["mode"] == "bsp" and panel.baseline["step_s"] > 0
    panel.controls["mode"].value = "async"
    assert panel.last.setup["mode"] == "async" and len(panel.last.server_bytes) == 1
