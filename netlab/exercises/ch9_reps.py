"""Exercise 9 (chapter 9): REPS's entropy recycling -- reuse the paths whose packets came back clean.

A sender spraying over k paths keeps a small buffer of entropies (path numbers, 0..k-1), oldest first,
that recently worked. Write one step of it, as a function that returns a new buffer (do not change the
list you are given):

    reps(buffer, "send", fresh, size)     a packet is about to leave. If the buffer holds an entropy, use
                                          the oldest one and take it out: return (that entropy, the rest).
                                          If it is empty, explore: return (fresh, buffer), `fresh` being a
                                          random entropy the caller drew for you.
    reps(buffer, "clean", entropy, size)  the ACK of a packet sent with `entropy` came back without an ECN
                                          mark: recycle it, at the end (newest). The buffer holds at most
                                          `size` entropies; when it would hold more, the oldest goes.
                                          Return (None, the new buffer).
    reps(buffer, "marked" | "trimmed" | "lost", entropy, size)
                                          the packet found a congested queue (ECN), was trimmed (a NACK) or
                                          never came back: do not recycle it. Return (None, buffer).

Check your answer in the chapter, or with
``python -c "import netlab.check as c; print(c.reps_recycling())"``.
Hint: a path that fails never returns an ACK, so its entropy simply stops coming back; that is all REPS
needs to route around it. Bonato et al., arXiv 2407.21625, keep 8 entropies (size = 8).
"""


def reps(buffer: list, event: str, entropy: int, size: int = 8) -> tuple:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9: write one step of REPS's entropy recycling")
