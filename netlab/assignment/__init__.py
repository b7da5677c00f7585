"""Graded assignments from the chapters: hand out, collect, grade on real ranks.

* ``python -m netlab assignment build OUT/`` -- the student version (``build.py``);
* ``python -m netlab grade SUBMISSIONS/ --seed S`` -- every student's answers run against
  ``netlab.check`` in a sandboxed subprocess each, with a time limit (``grade.py``, ``sandbox.py``);
* ``--seed`` draws hidden variants of each check's cases (``variants.py``);
* ``python -m netlab assignment nbgrader COURSE/`` -- the same exercises as an nbgrader course.

``EXERCISES`` below is the one list of what is graded. The reference answers live in
``tests/solutions/`` (instructors only); nothing here ships them to students.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    chapter: str          # "ch1"
    notebook: str         # the chapter's notebook, whose exercise cell defines `function`
    module: str           # the stub's file in netlab/exercises/
    function: str         # what the student writes
    check: str            # the netlab.check function that judges it
    points: int
    time_limit_s: float   # wall-clock limit for one grading run (on a loaded 2-core machine)
    teaches: str          # one line, for the instructor guide and the grade table


EXERCISES = [
    Exercise("ch1", "01_why_the_network.ipynb", "ch1_step_time.py", "predict_step_time", "step_time", 10, 180,
             "a step's time = compute + ring all-reduce: 2(p-1) alpha + 2(p-1)/p n/B"),
    Exercise("ch2", "02_collectives.ipynb", "ch2_ring.py", "ring_allreduce", "ring_allreduce", 10, 180,
             "the ring all-reduce from send/recv: reduce-scatter, then all-gather, without deadlock"),
    Exercise("ch3", "03_parameter_servers.ipynb", "ch3_ssp_wait.py", "ssp_ready", "ssp_wait", 10, 240,
             "bounded staleness (SSP): when a worker may run ahead of the slowest"),
    Exercise("ch4", "04_gradient_compression.ipynb", "ch4_topk_ef.py", "topk_with_error_feedback",
             "topk_error_feedback", 10, 420, "top-k sparsification with error feedback, and what it costs on the wire"),
    Exercise("ch5", "05_topology.ipynb", "ch5_max_min.py", "max_min_rates", "max_min_rates", 10, 120,
             "max-min fair sharing of links by progressive filling"),
    Exercise("ch6", "06_congestion_control.ipynb", "ch6_dctcp.py", "dctcp_update", "dctcp_update", 10, 180,
             "DCTCP's sender: the marked fraction, alpha's moving average and the window cut, in Linux's order"),
    Exercise("ch7", "07_observability.ipynb", "ch7_overlap.py", "predict_overlapped_step",
             "overlapped_step_time", 10, 300,
             "gradient buckets all-reduced in order beside the backward pass: when the step ends"),
    Exercise("ch8", "08_codesign_and_parallelism.ipynb", "ch8_capstone.py", "capstone_design", "capstone_design",
             10, 120, "the capstone: algorithm, compression, buckets and placement that reach 80 % on 256 GPUs"),
    Exercise("ch9", "09_ethernet_for_ai.ipynb", "ch9_reps.py", "reps", "reps_recycling", 10, 240,
             "REPS's entropy recycling: reuse the oldest clean entropy, explore when none is left, never recycle "
             "a marked, trimmed or lost one"),
]
BY_CHAPTER = {e.chapter: e for e in EXERCISES}
