"""Exercise 6 (chapter 6): DCTCP's sender -- one window of data: the cut, then the estimate alpha.

Once per window of data, a DCTCP sender learns how many of the packets it sent came back with their
ECN echo set. Two things happen in that window, at two different moments, in this order (Linux's
tcp_dctcp.c; RFC 8257, section 3.3):

1. the cut: when the first marked ACK of the window arrives, and only if some packet was marked, the
   sender cuts its window with the alpha it has at that moment (the estimate from the windows before):
       cwnd = cwnd * (1 - alpha / 2)             never below 2 packets
2. the estimate: when the window's last packet is acknowledged, alpha takes in this window,
       F     = marked / acked                    the fraction of this window's packets that were marked
       alpha = (1 - g) * alpha + g * F           a moving average of F (g = 1/16 in Linux)

Arguments: `alpha` the estimate before this window (Linux starts it at 1), `cwnd` the window in
packets (a float), `acked` and `marked` counts of packets in this window (acked >= 1, 0 <= marked <=
acked), `g` the moving average's weight. Return the new (alpha, cwnd).

Check your answer in the chapter, or with
``python -c "import netlab.check as c; print(c.dctcp_update())"``.
Hint: with every packet marked for many windows alpha climbs toward 1 and the cut approaches Reno's
halving; with one mark in a hundred the cut is gentle. That difference is DCTCP.
"""


def dctcp_update(alpha: float, cwnd: float, acked: int, marked: int, g: float = 1 / 16) -> tuple[float, float]:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 6: write DCTCP's window cut and alpha update")
