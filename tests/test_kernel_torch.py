"""The notebook kernel does not import torch: only the ranks do.

For every chapter, a fresh interpreter runs exactly the ``import``/``from`` lines of the chapter's
code cells (read from the notebook now, so a new import line is covered too) and one small
representative call of the chapter, then reports which torch modules ``sys.modules`` holds: the
check is Python's own record of what was imported, not netlab's. Chapter 4's call is its exercise
check with an answer written as the chapter asks (``import torch`` inside the function): the check
runs it on a rank.
"""
import ast
import json
import os
import subprocess
import sys

import nbformat
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CALLS = {
    "01_why_the_network.ipynb":
        'r = measure_step(ranks=2, bandwidth="10Gbit/s", latency="5us", width=64)\n'
        'assert r.total_s > r.comm_s > 0',
    "02_collectives.ipynb":
        'kw = dict(ranks=2, network=netlab.network("10Gbit/s", "5us"), device=netlab.device("cpu-core"))\n'
        's = netlab.run(zero.sharded_adam_step, sharded=True, **kw)\n'
        'p = netlab.run(zero.sharded_adam_step, sharded=False, **kw)\n'
        'assert max((a["params"] - b["params"]).abs().max().item() for a, b in zip(s.values, p.values)) < 1e-5\n'
        'assert bench("allreduce", "ring", 2, [4096], network=netlab.network("10Gbit/s", "5us"))[0]["type"] == "float"',
    "03_parameter_servers.ipynb":
        'kw = dict(workers=2, servers=2, width=64, bandwidth="1Gbit/s", latency="5us", eval_every=0)\n'
        'whole = ps.run_ps(steps=4, **kw)\n'
        'resumed = elastic.resume(elastic.save(ps.run_ps(steps=2, **kw)), steps=4, start=2, **kw)\n'
        'assert (ps.assemble(whole) == ps.assemble(resumed)).all()\n'
        'lost = elastic.lost_updates(elastic.run_elastic(workers=3, servers=2, steps=4, leave={1: 2}, width=64))\n'
        'assert lost["max_abs_difference"] < 1e-5 and lost["weights_vs_init_minus_lr_sum"] < 1e-5\n'
        'assert sparse.run_sparse(workers=2, servers=2, steps=1, rows=200)["table"].shape == (200, 16)',
    "04_gradient_compression.ipynb":
        'def answer(grad, residual, ratio):\n'
        '    import torch\n'
        '    p = grad + residual\n'
        '    i = torch.topk(p.abs(), max(1, round(ratio * p.numel()))).indices\n'
        '    rest = p.clone()\n'
        '    rest[i] = 0\n'
        '    return i, p[i], rest\n'
        'netlab.check.topk_error_feedback(answer, steps=20).assert_passed()',
    "05_topology.ipynb":
        'rows = real_vs_sim(netlab.network("10Gbit/s", "5us"), 2, ["ring"], [1 << 16])\n'
        'assert rows',
    "06_congestion_control.ipynb":
        'r = step_jitter(transports=("dctcp",), ranks=2, steps=2)\n'
        'assert len(r["dctcp"]["times"]) == 2',
    "07_observability.ipynb":
        'from netlab.dataparallel import buckets as _b\n'
        'prof = _b.backward_profile(64, 2, 16)\n'
        'assert prof.total_flops > prof.forward_flops > 0 and sorted(prof.order) == list(range(len(prof.order)))\n'
        'panel = Ch7Panel(ranks=2)\n'
        'assert panel.samples > 0',
    "08_codesign_and_parallelism.ipynb":
        'runs = {m: measure(m, bandwidth="10Gbit/s", ranks=2, width=64, layers=2, batch=16, micro_batches=2) for m in MODES}\n'
        'assert all(r.step_s > 0 for r in runs.values())\n'
        'assert bench("alltoall", "pairwise", 2, [4096], network=network("10Gbit/s", "5us"), check=True)[0]["check"] == "ok"\n'
        'panel = Ch8Panel(hosts=8)\n'
        'assert panel.error is None and panel.last["chosen"]["time_s"] > 0\n'
        'assert board.play("allreduce-4k", small=True)[0].verdict == "ok"',
    "09_ethernet_for_ai.ipynb":
        'real_s, seen = incast_on_ranks(3, 65536, "1Gbit/s", "50us", congestion=Congestion("rccc", buffer=32768))\n'
        'assert real_s > 0\n'
        'panel = EthernetPanel()\n'
        'assert panel.error is None',
}


def chapter_imports(notebook: str) -> list[str]:
    nb = nbformat.read(os.path.join(ROOT, "labs", notebook), as_version=4)
    lines = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line   # IPython magics
                               for line in cell.source.splitlines())
            tree = ast.parse(source)               # whole statements: an import may wrap over several lines
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    line = ast.get_source_segment(source, node)
                    if line not in lines:
                        lines.append(line)
    return lines


@pytest.mark.slow                     # a fresh interpreter and a rank pool per chapter
@pytest.mark.parametrize("notebook", sorted(CALLS))
def test_a_chapter_kernel_never_imports_torch(notebook):
    imports = chapter_imports(notebook)
    assert any("netlab" in line for line in imports)
    code = "\n".join(imports + [CALLS[notebook], "import sys, json",
                                "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))",
                                "netlab.shutdown()"])
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg",
               OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(ROOT, "labs"), env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


def test_the_check_would_see_torch():
    """The same probe, on a module that does import torch, reports it (the test above can fail)."""
    code = "import netlab.dataparallel.train as t, sys; t.torch.zeros(1); print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "True", run.stderr[-2000:]
