"""DCQCN's fluid model (Zhu, Ghobadi, Misra, Padhye, "ECN or Delay", CoNEXT'16), integrated with Euler steps.

Per flow i (rates in packets/s, the paper's unit; 1 packet = ``packet`` bytes), with the congestion
signal seen after a feedback delay tau* (p and R_C below are taken at t - tau*):
    p(q)     = 0 below Kmin, Pmax (q - Kmin)/(Kmax - Kmin) up to Kmax, 1 above Kmax
    dq/dt    = sum_i R_C,i - C                                   (q >= 0)
    a        = 1 - (1 - p)^(tau R_C)          probability of at least one CNP per CNP timer tau
    b        = p / ((1 - p)^-B - 1)           byte-counter increase events per packet
    c        = b (1 - p)^(F B)                ... of which additive (past F stages)
    d        = p / ((1 - p)^-(T R_C) - 1)     timer increase events per packet
    e        = d (1 - p)^(F T R_C)            ... of which additive
    dalpha/dt = g/tau' ((1 - (1 - p)^(tau' R_C)) - alpha)
    dR_T/dt  = -(R_T - R_C) a / tau + R_AI R_C (c + e)
    dR_C/dt  = -R_C alpha a / (2 tau) + (R_T - R_C)/2 R_C (b + d)
Defaults are the paper's (its Matlab dcqcn2.m): C = 40 Gbit/s, Kmin = 5 KB, Kmax = 200 KB,
Pmax = 1 %, g = 1/256, tau = 50 us, tau' = T = 55 us, B = 10 MB, F = 5, R_AI = 40 Mbit/s, with
1000-byte packets; all but C and the packet size are the packet model's own (``rdma.DCQCN_PARAMS``,
``rdma.DCQCN_RED``), so the two levels cannot drift apart. Flows start at line rate with alpha = 1.

Why a fluid model here: the paper's stability results (stable at 4 us of feedback delay, a
sustained oscillation for 10 flows at 85 us) are statements about this model; a packet-level run at
40 Gbit/s needs about 5 million packets per second of virtual time. Left out: hyper increase (the
model has none), PFC, and the randomness of marking.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import validate
from ..net.result import SimResult
from .rdma import DCQCN_PARAMS as P, DCQCN_RED as RED, DCQCNParams
from .switch import ECN


@dataclass(eq=False)
class FluidDetail:
    """What the fluid model observes, beside the ``SimResult`` fields every model has (``time_s``: the seconds
    integrated; ``net/result.py``): the samples' times ``t`` (s), the bottleneck's queue at each
    (``queue_bytes``, or ``queue()`` as the packet fabric gives a port's), each flow's rate at each
    (``rates``, bytes/s, (samples, flows)), the bottleneck's ``capacity`` (bytes/s) and the model's ``packet``
    (bytes). Read through the result: ``run.queue()``, ``run.rates``, ``run.window(0.05)``."""
    t: np.ndarray          # s, sample times
    queue_bytes: np.ndarray   # bytes, (samples,)
    rates: np.ndarray      # bytes/s, (samples, flows)
    capacity: float        # bytes/s
    packet: int            # bytes
    result: SimResult | None = field(default=None, repr=False)   # the run it belongs to (set by SimResult)

    def queue(self, port: str | None = None):
        """(times s, queue bytes) at the one bottleneck (``port``: None; the model has no other)."""
        if port is not None:
            raise ValueError(f"port: the fluid model has one bottleneck; give None, not {port!r}")
        return self.t, self.queue_bytes

    def window(self, start: float):
        """The samples at or after ``start`` seconds: (queue, rates)."""
        keep = self.t >= start
        return self.queue_bytes[keep], self.rates[keep]

    def summary(self) -> dict:
        """The flows, the capacity, the seconds integrated and the queue's median and most."""
        r, q = self.result, self.queue_bytes
        return {"flows": int(self.rates.shape[1]) if self.rates.ndim == 2 else 0, "capacity_Bps": self.capacity,
                "time_s": r.time_s, "queue_p50_bytes": float(np.median(q)) if q.size else math.nan,
                "queue_max_bytes": float(q.max()) if q.size else math.nan, "wall_s": r.wall_s}


@dataclass(frozen=True, kw_only=True)
class FluidModel:
    """What the fluid model integrates besides its flows: the bottleneck's ``capacity`` (bytes/s), the
    switch's RED marking ``red`` (an ``ECN``; its Kmin, Kmax, Pmax), DCQCN's constants ``params``
    (``rdma.DCQCNParams``: g, tau, tau', T, B, F, R_AI) and the model's ``packet`` (bytes, the paper's unit).
    The defaults are the packet model's own (``DCQCN_RED``, ``DCQCN_PARAMS``) at the paper's 40 Gbit/s."""
    capacity: float = 40e9 / 8
    red: ECN = RED
    params: DCQCNParams = P
    packet: int = 1000

    def __post_init__(self):
        validate.positive(self.capacity, "capacity")
        validate.whole(self.packet, "packet", 1, int_only=True)
        validate.instance(self.red, "red", ECN, "a netlab.fabric.ECN")
        validate.instance(self.params, "params", DCQCNParams, "a netlab.fabric.rdma.DCQCNParams")


def dcqcn_fluid(flows: int = 2, delay: float = 4e-6, duration: float = 0.05, *, model: FluidModel = FluidModel(),
                start_rates=None, dt: float = 0.5e-6, sample: float = 5e-6) -> SimResult:
    """Integrate the model for ``duration`` seconds; every size in bytes, rates in bytes/s. Returns a
    ``SimResult`` (model 'fluid') with a ``FluidDetail``: its samples every ``sample`` seconds."""
    wall = time.perf_counter()
    validate.whole(flows, "flows", 1, int_only=True)
    validate.number(delay, "delay", 0)
    capacity, packet, kmin, kmax, pmax = model.capacity, model.packet, model.red.kmin, model.red.kmax, model.red.pmax
    g, tau, tau_alpha, timer = model.params.g, model.params.cnp_interval, model.params.alpha_timer, \
        model.params.increase_timer
    byte_counter, fast_recovery_steps, rate_ai = model.params.byte_counter, model.params.fast_recovery_steps, \
        model.params.rate_ai
    C = capacity / packet                                  # packets/s
    k0, k1, B, r_ai = kmin / packet, kmax / packet, byte_counter / packet, rate_ai / packet
    F = fast_recovery_steps
    lag = max(1, int(round(delay / dt)))                   # steps of feedback delay
    if start_rates is None:                                # identical flows stay identical: integrate one
        rc, weight = [C], [flows]
    else:
        rc = [float(r) / packet for r in start_rates]
        if len(rc) != flows:
            raise ValueError(f"start_rates: expected {flows} rates, got {len(rc)}")
        weight = [1] * flows
    m = len(rc)
    rt, alpha = list(rc), [1.0] * m
    q = 0.0
    hist_rc = [list(rc) for _ in range(lag)]               # ring buffers of the delayed signals
    hist_p = [0.0] * lag
    every = max(1, int(round(sample / dt)))
    steps = int(round(duration / dt))
    out_t, out_q, out_r = [], [], []
    exp, expm1, log = math.exp, math.expm1, math.log
    for n in range(steps):
        slot = n % lag
        delayed, p = hist_rc[slot], hist_p[slot]          # values from tau* ago
        log_keep = log(1.0 - min(p, 1.0 - 1e-12)) if p > 0 else 0.0
        arrivals = 0.0
        for i in range(m):
            rd, c_i, t_i, a_i = delayed[i], rc[i], rt[i], alpha[i]
            if p > 0:
                a = -expm1(tau * rd * log_keep)
                b = p / expm1(min(-B * log_keep, 700.0))
                c = b * exp(F * B * log_keep)
                d = p / expm1(min(-timer * rd * log_keep, 700.0))
                e = d * exp(F * timer * rd * log_keep)
                marked = -expm1(tau_alpha * rd * log_keep)
            else:                                          # p -> 0 limits: no CNPs, every increase additive
                a = marked = 0.0
                b = c = 1.0 / B
                d = e = 1.0 / (timer * rd) if rd > 0 else 0.0
            alpha[i] = a_i + g / tau_alpha * (marked - a_i) * dt
            rt[i] = min(C, t_i + (-(t_i - c_i) * a / tau + r_ai * rd * (c + e)) * dt)
            rc[i] = min(C, max(0.0, c_i + (-c_i * a_i * a / (2 * tau) + (t_i - c_i) / 2 * rd * (b + d)) * dt))
            arrivals += weight[i] * c_i
        q = max(0.0, q + (arrivals - C) * dt)
        hist_rc[slot] = list(rc)
        hist_p[slot] = 0.0 if q <= k0 else (1.0 if q > k1 else pmax * (q - k0) / (k1 - k0))
        if n % every == 0:
            out_t.append(n * dt)
            out_q.append(q)
            out_r.append([rc[i] for i in range(m) for _ in range(weight[i])])
    detail = FluidDetail(t=np.asarray(out_t), queue_bytes=np.asarray(out_q) * packet,
                         rates=np.asarray(out_r) * packet, capacity=capacity, packet=packet)
    return SimResult(model="fluid", time_s=steps * dt, wall_s=time.perf_counter() - wall, detail=detail)


def fixed_point(flows: int, *, model: FluidModel = FluidModel()) -> dict:
    """CoNEXT'16's approximate fixed point: p* = cbrt(R_AI N^2/(tau' C^2) (1/B + N/(T C))^2), q* from RED."""
    capacity, packet, kmin, kmax, pmax = model.capacity, model.packet, model.red.kmin, model.red.kmax, model.red.pmax
    tau_alpha, timer, byte_counter, rate_ai = model.params.alpha_timer, model.params.increase_timer, \
        model.params.byte_counter, model.params.rate_ai
    C, B, r_ai = capacity / packet, byte_counter / packet, rate_ai / packet
    p = (r_ai * flows**2 / (tau_alpha * C**2) * (1 / B + flows / (timer * C)) ** 2) ** (1 / 3)
    q = (p / pmax * (kmax - kmin) + kmin) if p <= pmax else float("inf")
    return {"p": p, "queue_bytes": q, "rate": capacity / flows}
