"""Exercise 3 (chapter 3): the wait condition of bounded staleness (SSP).

Write ``ssp_ready(step, clocks, staleness)`` and return True if the worker may start its next step now,
False if it must wait. A parameter server calls it to decide when to send a worker its fresh parameters.

Arguments:
    step       -- the step this worker has just pushed (steps count from 0); it wants to start step + 1 (int)
    clocks     -- for every worker still training, how many steps it has pushed so far, in rank order; the
                  asking worker is in it (with step + 1), so it is never empty (list of int)
    staleness  -- the bound s, in steps (int >= 0, or ``math.inf``: fully asynchronous)

The rule: no worker may start a step while the slowest worker is more than s steps behind it. A worker
that has pushed c steps is working on step c (or waiting to start it).

The check asks your function about every state a server running SSP can reach with up to 4 workers
(and the grader about more), then runs it inside real parameter servers.

Hint: with s = 0 this must behave like BSP: the worker may start step + 1 only when everyone has pushed
step `step`. Work out that case with clocks, then see what changes when the slowest may be s steps behind.

Check your answer in the chapter, or with ``python -c "import netlab.check as c; print(c.ssp_wait())"``.
"""


def ssp_ready(step: int, clocks: list, staleness: float) -> bool:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 3: write the SSP wait condition")
