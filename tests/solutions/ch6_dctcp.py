"""Reference solution of Exercise 6 (kept out of the package; CI proves it passes the check)."""


def dctcp_update(alpha, cwnd, acked, marked, g=1 / 16):
    if marked:                                   # cut at the window's first mark, with the alpha in hand
        cwnd = max(cwnd * (1 - alpha / 2), 2.0)
    alpha = (1 - g) * alpha + g * marked / acked   # the window's end: the estimate takes in its marks
    return alpha, cwnd
