"""Reference solution of Exercise 6 (kept out of the package; CI proves it passes the check)."""


def dctcp_update(alpha, cwnd, acked, marked, g=1 / 16):
    alpha = (1 - g) * alpha + g * marked / acked
    if marked:
        cwnd = max(cwnd * (1 - alpha / 2), 2.0)
    return alpha, cwnd
