"""Exercise 6 (chapter 6): DCTCP's sender -- the marked fraction, alpha, and the window cut.

Once per window of data, a DCTCP sender sees how many of the packets it sent came back with their
ECN echo set. Write one window's update:

    F     = marked / acked                      the fraction of this window's packets that were marked
    alpha = (1 - g) * alpha + g * F             a moving average of F (g = 1/16 in Linux)
    cwnd  = cwnd * (1 - alpha / 2)              only if at least one packet was marked; never below 2

`alpha` is the previous estimate (Linux starts it at 1), `cwnd` the window in packets, `acked` and
`marked` counts of packets in this window (acked >= 1). Return the new (alpha, cwnd).

Check your answer in the chapter, or with
``python -c "import netlab.check as c; print(c.dctcp_update())"``.
Hint: with every packet marked alpha climbs toward 1 and the cut approaches Reno's halving; with one
mark in a hundred, the cut is gentle. That difference is DCTCP.
"""


def dctcp_update(alpha: float, cwnd: float, acked: int, marked: int, g: float = 1 / 16) -> tuple[float, float]:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 6: write DCTCP's alpha and window update")
