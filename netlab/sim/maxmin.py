"""Max-min fair sharing of links by concurrent flows: progressive filling, vectorised in numpy.

Max-min fairness (Bertsekas & Gallager, *Data Networks*, 6.5.2): no flow can get more without
taking from a flow that has no more than it. Progressive filling finds it: raise every unfrozen
flow's rate by the same amount until some link is full; freeze the flows that cross a full link;
repeat with the capacity that is left. Done one level at a time that takes as many rounds as
there are distinct rates (hundreds under heavy ECMP collisions); ``FlowSet.solve`` freezes every
link that is already the tightest along all of its flows in the same round, which gives the same
answer in a handful of rounds. Each round is a few ``np.bincount``/``reduceat`` calls over the
(flow, link, weight) triples of the routes, so a solve over thousands of flows takes about a
millisecond.

A flow's weight on a link is the share of its bytes that crosses it (1 on a single path, 1/m on
each of m sprayed paths): link l constrains sum_f weight(f, l) * rate(f) <= capacity(l).

What TCP or RDMA congestion control actually converge to differs from max-min (RTT unfairness,
DCQCN's dynamics; chapter 6); max-min is the standard flow-level idealisation (SimGrid, m3).
"""
from __future__ import annotations

import numpy as np

def max_min(flow: np.ndarray, link: np.ndarray, weight: np.ndarray, capacity: np.ndarray, *, n_flows: int,
            active: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates (bytes/s) of n_flows flows; `link` indexes `capacity` (bytes/s per link).

    flow, link, weight: (T,) triples; active: (n_flows,) bool, flows not active get rate 0.
    """
    flow, link, weight = (np.asarray(a) for a in (flow, link, weight))
    order = np.argsort(flow, kind="stable")
    fs = FlowSet(flow[order], link[order], weight[order].astype(float), np.asarray(capacity, dtype=float), n_flows=n_flows)
    return fs.solve(np.ones(n_flows, dtype=bool) if active is None else np.asarray(active, dtype=bool))


class FlowSet:
    """Flows and their routes as (flow, link, weight) triples sorted by flow, ready for repeated solves.

    A ring's 2(p-1) steps share one set of (sender, receiver) pairs, so one FlowSet serves them
    all; solutions are kept per set of still-active flows (completions change that set).
    """

    def __init__(self, flow, link, weight, capacity, *, n_flows: int):
        self.flow, self.weight, self.n = flow, weight, n_flows          # (T,) each, sorted by flow
        self.links, self.li = np.unique(link, return_inverse=True)      # li: compact link index 0..L-1
        self.cap = capacity[self.links].astype(float)                   # (L,) bytes/s
        present = np.bincount(flow, minlength=n_flows) > 0
        if not present.all():
            raise ValueError("flows: every flow needs at least one link")
        self.flow_starts = np.searchsorted(flow, np.arange(n_flows))    # segment of each flow
        self.by_link = np.argsort(self.li, kind="stable")               # triples regrouped by link
        self.link_starts = np.searchsorted(self.li[self.by_link], np.arange(self.links.size))
        self._solved: dict[bytes, np.ndarray] = {}

    def rates(self, active: np.ndarray) -> np.ndarray:
        """(n,) max-min rates in bytes/s with only `active` flows sending (cached per active set)."""
        key = active.tobytes()
        r = self._solved.get(key)
        if r is None:
            if len(self._solved) * self.n > 4_000_000:         # keep memory bounded (32 MB of rates)
                self._solved.clear()
            r = self._solved[key] = self.solve(active)
        return r

    def solve(self, active: np.ndarray) -> np.ndarray:
        """Progressive filling, many bottlenecks per round.

        A link's share is what each of its unfrozen flows would get if it filled now:
        left / (their total weight). Filling raises all flows together, so the link with the
        smallest share fills first -- and so does every link whose share is the smallest along
        each of its own flows (shares only grow as other flows freeze). All those links' flows
        freeze at their share in one round: exact max-min, in a few rounds instead of one per level.
        """
        flow, li, w = self.flow, self.li, self.weight
        rate = np.zeros(self.n)
        frozen = ~active
        live = ~frozen[flow]                                            # (T,) triples still rising
        left = self.cap.copy()
        load = np.bincount(li[live], w[live], minlength=self.cap.size)  # (L,) weight of rising flows
        while live.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(load > 0, np.maximum(left, 0) / load, np.inf)           # (L,)
            per_flow = np.minimum.reduceat(share[li], self.flow_starts)                  # (n,) tightest link
            per_flow[frozen] = np.inf
            per_link = np.minimum.reduceat(per_flow[flow[self.by_link]], self.link_starts)  # (L,)
            bottleneck = (share <= per_link) & (load > 0)
            newly = np.zeros(self.n, dtype=bool)
            newly[flow[live & bottleneck[li]]] = True
            rate[newly] = per_flow[newly]
            frozen |= newly
            done = live & newly[flow]
            left -= np.bincount(li[done], w[done] * rate[flow[done]], minlength=self.cap.size)
            load -= np.bincount(li[done], w[done], minlength=self.cap.size)
            live &= ~done
        return rate

    def link_load(self, sizes: np.ndarray) -> np.ndarray:
        """Bytes each of this set's links carries when flow f moves sizes[f] bytes: (len(links),)."""
        return np.bincount(self.li, self.weight * sizes[self.flow], minlength=self.links.size)


def max_min_rates(paths: list, capacity: dict) -> list[float]:
    """Max-min fair rates for flows given as lists of link names, capacity as {link: bytes/s}.

    The friendly form of ``max_min`` used by chapter 5's exercise check:
    ``max_min_rates([["a", "b"], ["b"]], {"a": 10, "b": 10}) -> [5.0, 5.0]``.
    """
    names = sorted(capacity)
    index = {name: i for i, name in enumerate(names)}
    flow, link = [], []
    for f, path in enumerate(paths):
        for name in path:
            if name not in index:
                raise ValueError(f"paths: flow {f} uses link {name!r}, which has no capacity")
            flow.append(f)
            link.append(index[name])
    cap = np.array([float(capacity[n]) for n in names])
    rates = max_min(np.array(flow, dtype=np.int64), np.array(link, dtype=np.int64), np.ones(len(flow)), cap,
                    n_flows=len(paths))
    return [float(r) for r in rates]
