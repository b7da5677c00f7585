"""Exercise 3 (chapter 3): the wait condition of bounded staleness (SSP).

A parameter server holds back a worker's fresh parameters until it may start its next step. The
worker has just pushed step `step` (steps count from 0) and wants to start step `step + 1`.
`clocks` lists, for every worker still training, how many steps it has pushed so far (the worker
itself included). `staleness` is the bound s: no worker may start a step while the slowest worker
is more than s steps behind it. `staleness` may be ``math.inf`` (fully asynchronous).

Return True if the worker may start step `step + 1` now, False if it must wait.

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.ssp_wait())"``.
Hints: with s = 0 this must behave like BSP (everyone has pushed step `step`); an empty `clocks`
means nobody is left to wait for.
"""


def ssp_ready(step: int, clocks: list, staleness: float) -> bool:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 3: write the SSP wait condition")
