"""Every figure of the lab, one module per subject, in one visual language (``common``).

* ``common``: one colour per meaning (``COLORS``: compute, communication, waiting, a queue...), styles per
  algorithm and method, ``label_lines``, ``log_grid``, ``margins``, and the pyplot-free ``figure``;
* ``timeline``: the one per-rank timeline of every chapter, intervals ``(rank, start, end, kind)`` in
  ``COLORS`` (chapter 1's step and its split, chapter 7's kernels);
* ``step``: throughput scaling (chapter 1);
* ``collectives``: the ring's chunks, collective time against size and ranks (chapter 2);
* ``ps``: per-server load, staleness, accuracy against time (chapter 3);
* ``compress``: accuracy curves, step time against bandwidth, the method grid (chapter 4);
* ``topology``: a fabric drawn with its link loads, busbw against scale (chapter 5);
* ``congestion``: incast runs, step-time CDFs, PFC victims, DCTCP and DCQCN queues (chapter 6);
* ``trace``: a profiled step's kernels per rank, step time against bucket size, the pair maps (chapter 7);
* ``codesign``, ``parallel``, ``capstone``: in-network aggregation, placement, a ring against an
  all-to-all on an oversubscribed fat-tree, model parallelism's step time, scaling efficiency (chapter 8);
* ``challenge``: a challenge entry's per-link utilisation (``netlab.challenge``'s board).

Every figure function has one shape (``common`` says it in full): ``noun(data, *, ax=None, **options)``
when it draws one axes, ``noun(data, *, fig=None, **options)`` when it lays out several (a Figure or a
SubFigure); without a target it makes a new ``matplotlib.figure.Figure`` outside pyplot, and it
returns the figure, never shows it. It runs nothing (the experiments live with their subjects) and
holds no widget (``netlab.ui``); a chapter's panel figure is one function here, called from the panel.
"""
