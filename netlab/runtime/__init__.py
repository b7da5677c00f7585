"""The runtime: real gloo ranks that run a function, and the clock and trace they keep.

    errors.py     what a failed run raises (RankError, RankDied, RankTimeout, Interrupted)
    pool.py       Cluster: a pool of forked rank processes, one run at a time, and its teardown
    shared.py     the shared pool behind netlab.run, and its idle release
    cooperate.py  idle pools of the user's other kernels give their ranks back when one needs memory
    launch.py     netlab.run: the shared pool, or the process group torchrun set up
    torchrun.py   netlab.run under torchrun (RANK/WORLD_SIZE set)
    rank_loop.py  the loop each rank process runs;  preload.py  what the fork server imports once
    comm.py       Comm: send/recv/wait, compute, regions;  clock.py  its virtual and wall clocks
    trace.py      the events a run recorded;  result.py  what a run returns, one reply format
    rundir.py     one private temporary folder per driver;  death.py  why a rank (or the fork server) died
    interrupt.py  Ctrl-C and SIGTERM on the command line

Deliberately imports nothing: ``interrupt`` must be importable before torch. The public names are
``netlab.run`` and the rest of ``netlab/__init__.py``.
"""
