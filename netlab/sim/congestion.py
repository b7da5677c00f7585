"""Congestion control at scale: a per-time-step fluid model of transports, queues, ECN and PFC on a Topology.

    from netlab.net import fabrics
    from netlab.sim import congestion
    topo = fabrics.fat_tree(8)                                             # 128 hosts
    run = congestion.run(topo, src=[0, 1], dst=[5, 5], sizes=[1 << 20] * 2, transport="dcqcn",
                         pfc=(40e3, 20e3))
    run.fct, run.pause_s, run.queue_max, run.drops

``netlab.fabric`` moves packets through a few switches; at 128 hosts and more that is too slow, so
here every flow is a fluid and time advances in steps of ``dt`` (1 us by default), all flows and
links at once in numpy. A flow's route (``netlab.net.routing``) is a chain of (flow, link) pairs, each
holding the flow's bytes queued at that link's output port. Per step:

* arrivals: the sender injects at its transport's rate into its first link (its NIC, whose queue
  is host memory: never dropped, never marked); at later hops a flow's arrivals are what the
  previous hop served in the step before (one step of store-and-forward per hop);
* service: an output port sends capacity x dt, shared among its flows in proportion to the bytes
  each has there (a FIFO taken as a fluid); a paused port sends nothing;
* drops (drop-tail): a switch port whose queue exceeds its buffer drops the excess from what
  arrived in that step, from each flow in proportion to its arrivals; the sender sends them again;
* ECN: a switch port marks with RED's probability p(q) = 0 below Kmin, Pmax (q - Kmin)/(Kmax - Kmin)
  up to Kmax, 1 above; a flow sees 1 - prod(1 - p) over its path, one base RTT late;
* PFC (IEEE 802.1Qbb, one priority), with ingress accounting as switches do it: the bytes a switch
  holds that arrived over link u are counted against u; above Xoff, u is paused (its sender stops
  it entirely, for every flow on it) until they fall below Xon. A paused link's own queue then
  fills and pauses the links feeding *it*: pauses spread hop by hop up the tree toward the senders
  (a congestion tree), and a flow that only shares a paused link with the incast is slowed too
  (a victim) -- Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM'16, sections 2 and 4.

Transports (``TRANSPORTS``):
* ``dcqcn``: rate-based, DCQCN's fluid model (Zhu, Ghobadi, Misra, Padhye, "ECN or Delay",
  CoNEXT'16; the same equations as ``netlab.fabric.fluid``), per flow: rate cut
  R_C <- R_C (1 - alpha/2) at the rate CNPs arrive, alpha with g = 1/256, recovery toward R_T by
  the byte counter and the timer, additive increase R_AI. Paper defaults. Without hyper increase
  the first cut of a synchronized start overshoots and the climb back is R_AI per timer: 3 flows
  into a 40 Gbit/s port take about 12 ms to reach their max-min shares (a test checks the shares).
* ``reno``: loss-based AIMD on a window of bytes, ACK-clocked: slow start from 10 packets, +1
  packet per window in congestion avoidance, halved once per RTT on a loss, at most window bytes
  in flight. A flow that loses all but 3 packets of a window cannot fast-retransmit (fewer than 3
  duplicate ACKs) and stalls for a retransmission timeout of RTOmin, then restarts from 1 packet.
* ``ideal``: line rate, no reaction (lost bytes are sent again at once).

Left out (what ``netlab.fabric``'s packets show and a fluid cannot): the exact incast collapse
(which packets of which window drop, duplicate-ACK counting, the random sync of timeouts), go-back-N
recovery of lossy RoCE (here only the lost bytes are resent), DCQCN's hyper increase, pause-frame
propagation delay (a pause acts on the next step), per-packet ECMP imbalance, shared-buffer
dynamic thresholds, PFC deadlock and storms. Each hop adds one step of delay, so a flow finishes
about hops x dt later than a packet model would say (6 us on a fat-tree with the default dt).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..net.routing import route
from ..net.topology import Topology

TRANSPORTS = ("dcqcn", "reno", "ideal")


@dataclass
class CongestionRun:
    """What one run measured. Per flow (F,), per link (E,) of the topology; bytes, seconds."""
    fct: np.ndarray          # (F,) completion time from the flow's start (nan: not done by `until`)
    start: np.ndarray        # (F,) s
    size: np.ndarray         # (F,) bytes
    paths: list              # F lists of link ids, in hop order
    pause_s: np.ndarray      # (E,) time each link spent paused by PFC
    queue_max: np.ndarray    # (E,) largest queue at each output port
    drops: np.ndarray        # (E,) bytes dropped at each port
    marked: np.ndarray       # (E,) bytes that left each port carrying an ECN mark (expected value)
    timeouts: np.ndarray     # (F,) retransmission timeouts (reno)
    lost: np.ndarray         # (F,) bytes each flow lost and sent again
    end_s: float             # virtual time when the run stopped
    steps: int               # time steps integrated (skipped idle stalls not counted)
    wall_s: float
    trace: dict = field(default_factory=dict)   # t (S,), queue (S, E), rate (S, F) when record=True

    @property
    def throughput(self) -> np.ndarray:
        """(F,) size / completion time, bytes/s."""
        return self.size / self.fct


def _red(q, kmin, kmax, pmax):
    """RED's marking probability for queues q (bytes)."""
    p = np.clip((q - kmin) / max(kmax - kmin, 1e-9), 0.0, 1.0) * pmax
    p[q > kmax] = 1.0
    return p


def _check(transport, buffer, ecn, pfc, dt, sizes, src, dst, size):
    if transport not in TRANSPORTS:
        raise ValueError(f"transport: must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    if not buffer > 0:
        raise ValueError(f"buffer: must be a positive number of bytes, got {buffer!r}")
    if ecn is not None:
        kmin, kmax, pmax = ecn
        if not 0 <= kmin <= kmax:
            raise ValueError(f"ecn: Kmin must be between 0 and Kmax, got {ecn!r}")
        if not 0 < pmax <= 1:
            raise ValueError(f"ecn: Pmax must be in (0, 1], got {pmax!r}")
    if pfc is not None:
        xoff, xon = pfc
        if not 0 <= xon < xoff < buffer:
            raise ValueError(f"pfc: need 0 <= Xon < Xoff < buffer ({buffer:g}), got {pfc!r}")
    if not dt > 0:
        raise ValueError(f"dt: must be a positive number of seconds, got {dt!r}")
    if (sizes <= 0).any():
        raise ValueError("sizes: every flow needs at least one byte")
    if ((src < 0) | (src >= size) | (dst < 0) | (dst >= size)).any() or (src == dst).any():
        raise ValueError(f"src, dst: endpoints must be distinct slots from 0 to {size - 1}")


def run(topology: Topology, src, dst, sizes, starts=None, *, transport: str = "dcqcn", buffer: float = 512e3,
        ecn=(5e3, 200e3, 0.01), pfc=None, rto_min: float = 200e-6, mtu: int = 1000, dt: float = 1e-6,
        routing: str = "ecmp", seed: int = 0, until: float = 1.0, record: bool = False,
        sample: float = 10e-6) -> CongestionRun:
    """Run flows src[f] -> dst[f] (endpoint slots) of sizes[f] bytes from starts[f] s until all finish.

    buffer: bytes per switch output port; ecn: (Kmin, Kmax, Pmax) in bytes or None; pfc: (Xoff, Xon)
    in bytes per ingress link, or None for a lossy fabric; rto_min: reno's timeout, s.
    """
    wall = time.perf_counter()
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    size = np.asarray(sizes, dtype=float).reshape(-1)
    F, E, t0 = src.size, topology.links, np.zeros(src.size) if starts is None else np.asarray(starts, float)
    if size.size != F or dst.size != F or t0.size != F:
        raise ValueError("src, dst, sizes, starts: need one entry per flow each")
    _check(transport, buffer, ecn, pfc, dt, size, src, dst, topology.size)
    r = route(topology, topology.endpoints[src], topology.endpoints[dst], routing, seed)
    if not np.all(r.weight == 1):
        raise ValueError("routing: the fluid needs one path per flow ('ecmp' or 'adaptive')")
    tf, tl = r.flow, r.link                                        # (T,) triples, grouped by flow in hop order
    T = tf.size
    first_i = np.searchsorted(tf, np.arange(F))                    # (F,) first triple of each flow
    last_i = np.append(first_i[1:], T) - 1                         # (F,) last triple
    first = np.zeros(T, dtype=bool)
    first[first_i] = True
    prev_i = np.maximum(np.arange(T) - 1, 0)                       # (T,) previous hop's triple
    prev_l = np.where(first, -1, tl[prev_i])                       # (T,) link the bytes came in on
    inner = np.flatnonzero(~first)
    cap = topology.capacity                                        # (E,) bytes/s
    kinds = [topology.graph.nodes[v]["kind"] for v in range(topology.graph.number_of_nodes())]
    switch_port = np.array([kinds[u] == "switch" for u in topology.link_src])   # (E,) drops, marks here
    ecn_on = ecn is not None and transport != "ideal"
    one_way = np.add.reduceat(topology.latency[tl], first_i) + topology.hop_latency * r.hops   # (F,) s
    base_rtt = 2 * one_way
    line = cap[tl[first_i]]                                        # (F,) NIC rate, bytes/s
    room = 2 * line * dt + mtu                                     # (F,) bytes a NIC queue may hold per flow

    # per-flow state
    unsent, delivered, lost = size.copy(), np.zeros(F), np.zeros(F)
    sent = np.zeros(F)
    fct = np.full(F, np.nan)
    done = np.zeros(F, dtype=bool)
    timeouts = np.zeros(F, dtype=np.int64)
    # reno: window (bytes), slow-start threshold, loss episode, stall
    cwnd, ssthresh = np.full(F, 10.0 * mtu), np.full(F, np.inf)
    recover_until, episode_w, episode_lost = np.full(F, -1.0), np.zeros(F), np.zeros(F)
    stall_until = np.full(F, -1.0)
    # dcqcn (paper defaults; rates in packets/s inside the equations)
    rc, rt, alpha = line / mtu, line / mtu, np.ones(F)
    g, tau, tau_a, timer, B, Fr, r_ai = 1 / 256, 50e-6, 55e-6, 55e-6, 10e6 / mtu, 5, 40e6 / 8 / mtu
    lag = np.maximum(1, np.round(base_rtt / dt).astype(np.int64))  # (F,) steps of feedback delay
    back = np.maximum(1, np.round(one_way / dt).astype(np.int64))  # (F,) steps an ACK takes back
    D = int(lag.max()) + 1
    p_hist, ack_hist = np.zeros((D, F)), np.zeros((D, F))
    acked = np.zeros(F)                                            # (F,) bytes the sender knows arrived
    flows = np.arange(F)
    # per-link and per-triple state
    b = np.zeros(T)                                                # (T,) bytes of flow at port
    moving = np.zeros(T)                                           # (T,) served last step, arriving next hop
    paused = np.zeros(E, dtype=bool)
    pause_s, qmax, drops, marked = np.zeros(E), np.zeros(E), np.zeros(E), np.zeros(E)
    rec_t, rec_q, rec_r = [], [], []
    next_sample = 0.0
    t, n, steps = 0.0, 0, 0
    with np.errstate(all="ignore"):                                # 0/0 on idle ports, p -> 0 limits
        while not done.all() and t < until:
            live = (t0 <= t) & ~done & (stall_until <= t)
            if not live.any() and b.sum() + moving.sum() == 0:      # nothing moves: jump to the next event
                waits = np.concatenate([t0[t0 > t], stall_until[(stall_until > t) & ~done]])
                if waits.size == 0:
                    break
                t = float(waits.min())
                continue
            q = np.bincount(tl, b, minlength=E)                       # (E,) bytes queued per port
            p_link = _red(q, *ecn) * switch_port if ecn_on else np.zeros(E)
            keep = np.add.reduceat(np.log1p(-np.minimum(p_link[tl], 1 - 1e-12)), first_i)   # (F,) log P(no mark)
            p_hist[n % D] = -np.expm1(keep)
            p = p_hist[(n - lag) % D, flows]                          # (F,) mark probability, one RTT late
            # ---- the transport decides how much each flow may inject this step
            if transport == "dcqcn":
                lk = np.log1p(-np.minimum(p, 1 - 1e-12))
                marks = p > 0
                a = np.where(marks, -np.expm1(tau * rc * lk), 0.0)
                bb = np.where(marks, p / np.expm1(np.minimum(-B * lk, 700.0)), 1.0 / B)
                c = bb * np.exp(Fr * B * lk)
                d = np.where(marks, p / np.expm1(np.minimum(-timer * rc * lk, 700.0)), 1.0 / (timer * rc))
                e = d * np.exp(Fr * timer * rc * lk)
                seen = np.where(marks, -np.expm1(tau_a * rc * lk), 0.0)
                grow = live
                alpha = np.where(grow, alpha + g / tau_a * (seen - alpha) * dt, alpha)
                rt_new = np.minimum(line / mtu, rt + (-(rt - rc) * a / tau + r_ai * rc * (c + e)) * dt)
                rc_new = np.clip(rc + (-rc * alpha * a / (2 * tau) + (rt - rc) / 2 * rc * (bb + d)) * dt, 1.0, line / mtu)
                rt, rc = np.where(grow, rt_new, rt), np.where(grow, rc_new, rc)
                want = rc * mtu * dt
            elif transport == "reno":
                inflight = sent - acked - lost
                want = np.maximum(cwnd - inflight, 0.0)
            else:
                want = line * dt
            inject = np.where(live, np.minimum(np.minimum(want, unsent), np.maximum(room - b[first_i], 0.0)), 0.0)
            unsent -= inject
            sent += inject
            # ---- queues: arrive, serve, drop
            arrive = moving[prev_i]
            arrive[first_i] = inject
            avail = b + arrive
            total = np.bincount(tl, avail, minlength=E)
            frac = np.minimum(1.0, cap * dt / total)
            frac[paused | (total == 0)] = 0.0
            served = avail * frac[tl]
            b = avail - served
            q = np.bincount(tl, b, minlength=E)
            over = np.maximum(q - buffer, 0.0) * switch_port
            if over.any():
                came = np.bincount(tl, arrive, minlength=E)           # drop-tail: what arrived and did not fit
                cut = np.minimum(np.where(came > 0, over / came, 0.0)[tl] * arrive, b)   # (T,) dropped bytes
                b -= cut
                gone = np.bincount(tl, cut, minlength=E)
                q -= gone
                drops += gone
                dropped = np.bincount(tf, cut, minlength=F)
                lost += dropped
                unsent += dropped
            else:
                dropped = None
            qmax = np.maximum(qmax, q)
            marked += np.bincount(tl, served, minlength=E) * p_link
            got = served[last_i]
            moving = served
            moving[last_i] = 0.0
            delivered += got
            # ---- reno's reaction to ACKs (one way late) and losses
            if transport == "reno":
                ack_hist[n % D] = got
                new_acks = ack_hist[(n - back) % D, flows]
                acked += new_acks
                ss = cwnd < ssthresh
                cwnd = cwnd + np.where(ss, new_acks, mtu * new_acks / np.maximum(cwnd, mtu))
                if dropped is not None:
                    hit = dropped > 0
                    new = hit & (t >= recover_until)
                    episode_w = np.where(new, cwnd, episode_w)
                    episode_lost = np.where(new, 0.0, episode_lost) + dropped
                    ssthresh = np.where(new, np.maximum(cwnd / 2, 2 * mtu), ssthresh)
                    cwnd = np.where(new, ssthresh, cwnd)
                    rtt = base_rtt + np.add.reduceat(q[tl] / cap[tl], first_i)
                    recover_until = np.where(new, t + rtt, recover_until)
                    rto = hit & (stall_until <= t) & (episode_lost > episode_w - 3 * mtu)
                    if rto.any():
                        timeouts += rto
                        stall_until = np.where(rto, t + max(rto_min, dt), stall_until)
                        ssthresh = np.where(rto, np.maximum(episode_w / 2, 2 * mtu), ssthresh)
                        cwnd = np.where(rto, float(mtu), cwnd)
                        recover_until = np.where(rto, t + rto_min, recover_until)
            # ---- PFC: bytes held per ingress link, against Xoff / Xon
            if pfc is not None:
                held = np.bincount(prev_l[inner], b[inner], minlength=E)
                paused = np.where(held > pfc[0], True, np.where(held < pfc[1], False, paused))
                pause_s += paused * dt
            t += dt
            n += 1
            steps += 1
            finished = ~done & (delivered >= size * (1 - 1e-9))
            if finished.any():
                fct[finished] = t + one_way[finished] - t0[finished]
                done |= finished
            if record and t >= next_sample:
                rec_t.append(t), rec_q.append(q.copy()), rec_r.append(got / dt)
                next_sample += sample
    trace = {"t": np.array(rec_t), "queue": np.array(rec_q), "rate": np.array(rec_r)} if record else {}
    paths = [list(map(int, tl[first_i[f]:last_i[f] + 1])) for f in range(F)]
    return CongestionRun(fct, t0, size, paths, pause_s, qmax, drops, marked, timeouts, lost, t, steps,
                         time.perf_counter() - wall, trace)
