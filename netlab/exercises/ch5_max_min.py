"""Exercise 5 (chapter 5): share links fairly -- max-min rates by progressive filling.

Write ``max_min_rates(flows, capacity)`` and return each flow's max-min fair rate in bytes/s, as a list of
floats in the order of `flows`.

Arguments:
    flows     -- a list of flows, each the list of link names it crosses (its route through the fabric);
                 two flows may cross the same links
    capacity  -- a dict from every link name to its bandwidth in bytes/s

Progressive filling: every flow starts at rate 0. Raise the rates of all flows that are not frozen, all by
the same amount, until some link is full (the rates of the flows crossing it add up to its capacity).
Freeze every flow that crosses a full link. Repeat with the flows that are left until every flow is
frozen. Several links may fill in the same round; some cases need many rounds.

Hint: keep, for every link, the capacity the rates given out so far have not used yet, and how many
unfrozen flows still cross it.

Check your answer in the chapter, or with
``python -c "import netlab.check as c; print(c.max_min_rates())"``.
"""


def max_min_rates(flows: list[list[str]], capacity: dict[str, float]) -> list[float]:
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 5: write progressive filling")
