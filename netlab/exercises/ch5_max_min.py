"""Exercise 5 (chapter 5): share links fairly -- max-min rates by progressive filling.

`flows` is a list of flows, each the list of link names it crosses (its route through the fabric);
`capacity` maps every link name to its bandwidth in bytes/s. Return each flow's max-min fair rate
in bytes/s, in the order of `flows`.

Progressive filling: every flow starts at rate 0. Raise the rates of all flows that are not
frozen, all by the same amount, until some link is full (the rates of the flows crossing it add
up to its capacity). Freeze every flow that crosses a full link. Repeat with the flows that are
left until every flow is frozen.

Check your answer in the chapter, or with
``python -c "import netlab.check as c; print(c.max_min_rates())"``.
Hint: in each round, the amount you can raise everyone by is the smallest (capacity left) /
(unfrozen flows crossing it) over all links that still carry an unfrozen flow.
"""


def max_min_rates(flows: list[list[str]], capacity: dict[str, float]) -> list[float]:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 5: write progressive filling")
