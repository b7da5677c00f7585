"""Reference solution of Exercise 5 (kept out of the package; CI proves it passes the check)."""


def max_min_rates(flows, capacity):
    rate = [0.0] * len(flows)
    left = dict(capacity)
    frozen = [False] * len(flows)
    while not all(frozen):
        crossing = {}                                    # link -> unfrozen flows on it
        for f, path in enumerate(flows):
            if not frozen[f]:
                for link in path:
                    crossing[link] = crossing.get(link, 0) + 1
        raise_by = min(left[link] / n for link, n in crossing.items())
        for f in range(len(flows)):
            if not frozen[f]:
                rate[f] += raise_by
        for link, n in crossing.items():
            left[link] -= raise_by * n
        full = {link for link in crossing if left[link] <= 1e-9 * capacity[link]}
        for f, path in enumerate(flows):
            if not frozen[f] and full.intersection(path):
                frozen[f] = True
    return rate
