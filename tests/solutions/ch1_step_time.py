"""Reference solution of Exercise 1 (kept out of the package; CI proves it passes the check)."""


def predict_step_time(compute_s, grad_bytes, ranks, bandwidth, latency):
    if ranks == 1:
        return compute_s
    steps = 2 * (ranks - 1)
    return compute_s + steps * latency + steps / ranks * grad_bytes / bandwidth
