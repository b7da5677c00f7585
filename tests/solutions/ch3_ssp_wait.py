"""Reference solution of Exercise 3 (kept out of the package; CI proves it passes the check)."""


def ssp_ready(step, clocks, staleness):
    # the slowest worker must have finished step - staleness, i.e. pushed step + 1 - staleness steps
    return not clocks or min(clocks) >= step + 1 - staleness
