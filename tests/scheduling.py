"""How ``make test`` spreads the suite over its pytest-xdist workers (``--dist loadgroup``).

A unit of work goes to one worker whole, and its tests run there in collection order:

* the chapters group (tests/chapter_runs.py): every notebook's cells, then the tests that read this run's
  executed chapters (one kernel per notebook; the site is rendered from those runs, so they come after);
* one chapter of tests/test_browser.py (``SPLIT``): each drives its own chapter in JupyterLab, and a worker
  starts its own JupyterLab and Chromium (about 10 CPU seconds), so the browser's nine chapters spread over
  the workers instead of holding one for five minutes;
* every other test file, whole, as ``--dist loadfile`` does: its module fixtures are built once.

Units are handed out longest first (the longest-processing-time rule: a long unit that starts last decides
when the run ends), by the seconds ``COST`` gives a unit, measured in a ``make test`` run on two idle cores
(``python tests/scheduling.py junit.xml`` prints the table from a run's ``--junitxml``); a unit not listed
counts 0.2 s a test. The figures only order the units: a stale one
makes the run a little longer, never wrong. xdist's own loadgroup orders by test count, and marks a group by
appending "@group" to the test id, which pytest 9 no longer lets it do (a Node's id is no longer its
_nodeid): the group is read from the id itself here (``chapter_runs.in_group``).
"""
from __future__ import annotations

import pytest

import chapter_runs

SPLIT = ("tests/test_browser.py",)          # files whose tests are each a unit of their own

# seconds per unit, make test from a fresh clone on two idle cores, three workers, Binder built cold (7 December 2026,
# the 907 s run). A table from a later run (627 s) ordered the units so that the same suite took 697 s: kept this one;
# the rest count 0.2 s a test
COST = {
    'chapters': 389,
    'tests/test_binder_emulate.py': 196,
    'tests/test_capstone.py': 123,
    'tests/test_challenge_board.py': 111,
    'tests/test_linux_fabric.py': 108,
    'tests/test_panel_properties.py': 90,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[04_gradient_compression.ipynb]': 82,
    'tests/test_challenge.py': 78,
    'tests/test_claims_ch4.py': 78,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[03_parameter_servers.ipynb]': 65,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[07_observability.ipynb]': 44,
    'tests/test_assignment.py': 43,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[02_collectives.ipynb]': 41,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[01_why_the_network.ipynb]': 41,
    'tests/test_cooperate.py': 40,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[09_ethernet_for_ai.ipynb]': 37,
    'tests/test_leftovers.py': 35,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[05_topology.ipynb]': 34,
    'tests/test_claims_ch9.py': 32,
    'tests/test_cluster.py': 29,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[06_congestion_control.ipynb]': 29,
    'tests/test_compress_train.py': 28,
    'tests/test_claims_ch6.py': 27,
    'tests/test_panels.py': 24,
    'tests/test_cli_flags.py': 23,
    'tests/test_chapter_runs.py': 21,
    'tests/test_process_death.py': 20,
    'tests/test_oom_after_check.py': 20,
    'tests/test_claims_appendix.py': 20,
    'tests/test_memory.py': 19,
    'tests/test_ps.py': 19,
    'tests/test_nbgrader_export.py': 17,
    'tests/test_cost.py': 17,
    'tests/test_cli_signals.py': 16,
    'tests/test_browser.py::test_panels_work_in_jupyterlab[08_codesign_and_parallelism.ipynb]': 16,
    'tests/test_claims_ch3.py': 16,
    'tests/test_chapter2.py': 15,
    'tests/test_idle_release.py': 14,
    'tests/test_panel_stages.py': 13,
    'tests/test_ps_time.py': 12,
    'tests/test_kernel.py': 11,
    'tests/test_rank_death.py': 11,
    'tests/test_trace_and_cli.py': 10,
    'tests/test_compress_properties.py': 9,
    'tests/test_headless_stall.py': 9,
    'tests/test_fabric_sleep.py': 9,
    'tests/test_congestion_cli.py': 8,
    'tests/test_ch7_panel.py': 8,
    'tests/test_sim.py': 8,
    'tests/test_fabric_live.py': 6,
    'tests/test_exercises.py': 6,
    'tests/test_alltoall.py': 6,
    'tests/test_predict.py': 6,
    'tests/test_wrong_answers_ch3.py': 6,
    'tests/test_cli_properties.py': 5,
}
PER_TEST = 0.2


def unit(nodeid: str) -> str:
    """The unit of work a test id belongs to."""
    if chapter_runs.in_group(nodeid):
        return chapter_runs.GROUP
    file = nodeid.split("::", 1)[0]
    return nodeid if file in SPLIT else file


def cost(name: str, tests: int) -> float:
    return COST.get(name, PER_TEST * tests)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LongestFirst(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

        def schedule(self) -> None:
            """xdist's LoadScopeScheduling.schedule (3.8), with the work queue ordered longest first."""
            assert self.collection_is_completed
            if self.collection is not None:                 # a node joined later: more work for everyone
                for node in self.nodes:
                    self._reschedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            if not self.collection:
                return
            units: dict[str, dict[str, bool]] = {}
            for nodeid in self.collection:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            for name in sorted(units, key=lambda name: -cost(name, len(units[name]))):   # stable: ties keep order
                self.workqueue[name] = units[name]
            for _ in range(len(self.nodes) - len(self.workqueue)):      # more workers than work
                unused, _ = self.assigned_work.popitem()
                unused.shutdown()
            for node in self.nodes:
                self._assign_work_unit(node)
            for node in self.nodes:
                self._reschedule(node)
            if not self.workqueue:
                for node in self.nodes:
                    node.shutdown()

    return LongestFirst(config, log)


def costs_from_junit(path: str, least_s: float = 5.0) -> dict[str, float]:
    """{unit: seconds} summed over a run's junit report (``pytest --junitxml``), the units of at least `least_s`."""
    import xml.etree.ElementTree as ET
    total: dict[str, float] = {}
    for case in ET.parse(path).iter("testcase"):
        classname = case.get("classname", "")            # "tests.test_x" ("tests.test_x.TestY"), "labs.01_x.ipynb"
        if classname.endswith(".ipynb"):
            file = classname.replace(".", "/", 1)
        else:
            file = "/".join(classname.split(".")[:2]) + ".py"
        nodeid = f"{file}::{case.get('name')}"
        total[unit(nodeid)] = total.get(unit(nodeid), 0.0) + float(case.get("time", 0))
    return {name: s for name, s in sorted(total.items(), key=lambda kv: -kv[1]) if s >= least_s}


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/scheduling.py JUNIT_XML   (from pytest --junitxml; prints COST)")
    for name, seconds in costs_from_junit(sys.argv[1]).items():
        print(f"    {name!r}: {seconds:.0f},")
