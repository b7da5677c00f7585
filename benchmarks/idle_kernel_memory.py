"""What a chapter's kernel keeps once its rank pool has given its ranks back, and whether it imported torch.

    .venv/bin/python benchmarks/idle_kernel_memory.py labs/0*.ipynb           # CI sizes (CI=1)
    .venv/bin/python benchmarks/idle_kernel_memory.py --full labs/03_parameter_servers.ipynb

Each chapter runs top to bottom in a fresh kernel with nbclient (``NETLAB_IDLE_S=5``, so the pool's
idle release comes soon after the last run); one more cell then waits for that release and prints
the kernel's own VmRSS and RssAnon from /proc (MB), whether ``torch`` is in its ``sys.modules``, and,
if it is, the chapter line and netlab line that imported it first. On Binder every open kernel's
memory counts against the same 2 GB, so this is what a chapter left open costs the next one.
"""
import os
import sys

from _harness import load, run_notebook

FIRST = '''
import sys as _s, traceback as _tb, importlib.abc as _ia
_TORCH_BY = []
class _Watch(_ia.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" and not _TORCH_BY:
            _TORCH_BY.extend(f"{f.filename}:{f.lineno} {f.line}" for f in _tb.extract_stack()[:-1]
                             if ("netlab" in f.filename and "lazy.py" not in f.filename) or "ipykernel_" in f.filename)
        return None
_s.meta_path.insert(0, _Watch())
'''
LAST = '''
import os as _o, time as _t
_t.sleep(float(_o.environ["NETLAB_IDLE_S"]) + 6)
_mb = {l.split(":")[0]: int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith(("VmRSS", "RssAnon"))}
print(_mb["VmRSS"], _mb["RssAnon"], "torch" in _s.modules)
print("\\n".join(_TORCH_BY[-3:]))
'''

full = "--full" in sys.argv
nbs = [a for a in sys.argv[1:] if a.endswith(".ipynb")]
if not nbs:
    sys.exit(__doc__)
print(f"{'chapter':40s} {'VmRSS MB':>8s} {'RssAnon MB':>10s}  torch  (load {load():.1f})")
for path in nbs:
    run = run_notebook(path, ci=not full, timeout=1800, env={"NETLAB_IDLE_S": "5"}, before=FIRST, after=LAST,
                       stop_on_error=True)
    first, _, by = "".join(o.get("text", "") for o in run.nb.cells[-1].outputs).partition("\n")
    rss, anon, torch = first.split()
    print(f"{os.path.basename(path):40s} {rss:>8s} {anon:>10s}  {torch:5s}  ({run.total_s:.0f} s)")
    if torch == "True":
        print("   first imported by:\n   " + by.strip().replace("\n", "\n   "))
