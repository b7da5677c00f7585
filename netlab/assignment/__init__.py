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
    Exercise(chapter="ch1", notebook="01_why_the_network.ipynb", module="ch1_step_time.py",
             function="predict_step_time", check="step_time", points=10, time_limit_s=180,
             teaches="a step's time = compute + ring all-reduce: 2(p-1) alpha + 2(p-1)/p n/B"),
    Exercise(chapter="ch2", notebook="02_collectives.ipynb", module="ch2_ring.py", function="ring_allreduce",
             check="ring_allreduce", points=10, time_limit_s=180,
             teaches="the ring all-reduce from send/recv: reduce-scatter, then all-gather, without deadlock"),
    Exercise(chapter="ch3", notebook="03_parameter_servers.ipynb", module="ch3_ssp_wait.py", function="ssp_ready",
             check="ssp_wait", points=10, time_limit_s=240,
             teaches="bounded staleness (SSP): when a worker may run ahead of the slowest"),
    Exercise(chapter="ch4", notebook="04_gradient_compression.ipynb", module="ch4_topk_ef.py",
             function="topk_with_error_feedback", check="topk_error_feedback", points=10, time_limit_s=420,
             teaches="top-k sparsification with error feedback, and what it costs on the wire"),
    Exercise(chapter="ch5", notebook="05_topology.ipynb", module="ch5_max_min.py", function="max_min_rates",
             check="max_min_rates", points=10, time_limit_s=120,
             teaches="max-min fair sharing of links by progressive filling"),
    Exercise(chapter="ch6", notebook="06_congestion_control.ipynb", module="ch6_dctcp.py", function="dctcp_update",
             check="dctcp_update", points=10, time_limit_s=180,
             teaches="DCTCP's sender: the marked fraction, alpha's moving average and the window cut, in Linux's "
             "order"),
    Exercise(chapter="ch7", notebook="07_observability.ipynb", module="ch7_overlap.py",
             function="predict_overlapped_step", check="overlapped_step_time", points=10, time_limit_s=300,
             teaches="gradient buckets all-reduced in order beside the backward pass: when the step ends"),
    Exercise(chapter="ch8", notebook="08_codesign_and_parallelism.ipynb", module="ch8_capstone.py",
             function="capstone_design", check="capstone_design", points=10, time_limit_s=120,
             teaches="the capstone: algorithm, compression, buckets and placement that reach 80 % on 256 GPUs"),
    Exercise(chapter="ch9", notebook="09_ethernet_for_ai.ipynb", module="ch9_reps.py", function="reps",
             check="reps_recycling", points=10, time_limit_s=240,
             teaches="REPS's entropy recycling: reuse the oldest clean entropy, explore when none is left, never "
             "recycle a marked, trimmed or lost one"),
]
BY_CHAPTER = {e.chapter: e for e in EXERCISES}
