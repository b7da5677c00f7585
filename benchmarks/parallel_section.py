"""Time chapter 8's model-parallelism section (the cells after its "## 3. Model parallelism" heading).

    CI=1 PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/parallel_section.py

Runs the chapter's setup cell, starts and warms the rank pool (the earlier sections have done that by
the time a reader gets here), then runs the section's code cells, printing each one's wall time and
the CPU seconds it cost this process and the ranks together, with the machine's load average. The
target is under 8 s added with CI=1 on an idle 2-core machine; on a loaded machine the wall time
measures the load, the CPU seconds much less so.
"""
import os
import time

import nbformat

from _harness import machine

PATH = os.path.join(os.path.dirname(__file__), "..", "labs", "08_codesign_and_parallelism.ipynb")
HEADING = "## 3. Model parallelism"


def cpu_seconds(pids) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = time.process_time()
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / tick          # utime, stime
    return total


def main() -> None:
    print(f"# {machine()} at the start", flush=True)
    nb = nbformat.read(PATH, 4)
    start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                 and c.source.startswith(HEADING))
    end = next(i for i in range(start + 1, len(nb.cells)) if nb.cells[i].cell_type == "markdown"
               and nb.cells[i].source.startswith("## "))
    ns: dict = {}
    exec(nb.cells[1].source.replace("%matplotlib inline", ""), ns)
    import netlab
    from netlab.codesign.parallel import measure
    pids = netlab.get_cluster(4).pids
    measure("dp", ranks=4)
    total_wall = total_cpu = 0.0
    for i in range(start, end):
        cell = nb.cells[i]
        if cell.cell_type != "code":
            continue
        wall, cpu = time.perf_counter(), cpu_seconds(pids)
        exec(cell.source, ns)
        wall, cpu = time.perf_counter() - wall, cpu_seconds(pids) - cpu
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"cell {cell.id}: {wall:.2f} s wall, {cpu:.2f} CPU s")
    print(f"section: {total_wall:.2f} s wall, {total_cpu:.2f} CPU s (CI={'CI' in os.environ}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
