"""Incast on the real Linux TCP stack: N senders push a block each round to one receiver.

    ok, why = linux.available()            # root and network namespaces? (False on Binder, laptops)
    r = linux.incast(senders=8, block="64K", bandwidth="100Mbit/s", buffer="32K",
                     transport="cubic", rto_min="200ms", rounds=20)
    r["goodput_Bps"], r["completion_s"]["p50"], r["timeouts"], r["drops"]

The setup is the classic incast of Vasudevan et al. (SIGCOMM'09), on the testbed of `netns.py`:
each round the receiver asks every sender for `block` bytes at once (one request byte each, like a
parameter server's pull or a storage client's striped read) and the round ends when the last byte
has arrived. All N synchronized windows meet in the switch port's small queue; the senders whose
tail was dropped and who have too few packets in flight for three duplicate ACKs wait out a
retransmission timeout (RTOmin = 200 ms on Linux), while the link idles. A small RTOmin, a deeper
buffer or ECN marking removes the wait. Times are the wall clock: this is a measurement, not a model.

One process drives everything: a socket belongs to the namespace it was created in, so the sender
sockets are opened inside the sender namespaces (setns on this thread) and then served by a single
epoll loop. That costs microseconds per event, far below the 100 Mbit/s port's 121 us per segment.
Counters: retransmission timeouts (TcpExtTCPTimeouts) and retransmitted segments (TcpRetransSegs)
from the sender namespaces' /proc/net, drops from the port's tbf qdisc, marks from the ECN marker.
`ps_push` runs the same incast with real gloo ranks (`_gloo_push.py`). `model` is the packet model's
prediction for the same testbed, with the kernel's loss recovery, timers, delayed ACKs, persistent
connections and tbf's bucket (docs/fabric.md, "The model beside the real Linux stack", has the
measured agreement).
Left out: PFC and lossless fabrics (a Linux bridge drops, veth has no dcb), propagation delay (no
netem here: the RTT is tens of microseconds plus queueing), DCTCP unless the kernel has it.

One concept: incast on the kernel's TCP, measured (``incast``, ``ps_push``) and predicted (``model``)
with the same keys, so the two are compared line by line.
"""
from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import NamedTuple

from .. import validate
from ..units import parse_bandwidth, parse_bytes, parse_time
from . import netns
from .netns import Testbed

WIRE_PER_SEGMENT = 1514 / 1448        # L2 bytes per payload byte: MSS 1448 (timestamps) in a 1514-byte frame
MAX_WALL_S = 120.0                    # a run longer than this is stopped with an error


class Unavailable(RuntimeError):
    """This machine cannot run the real Linux network (no root, no namespaces); the message says why."""


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, '') when this process can build namespaces with shaped bridges; else (False, why),
    why being one line a chapter can print before it falls back to the model. Checked once per
    process (it builds and removes a one-sender testbed)."""
    if os.name != "posix" or not os.path.exists("/proc/self/ns/net"):
        return False, "the real Linux network needs Linux with network namespaces"
    if os.geteuid() != 0:
        return False, "the real Linux network needs root (network namespaces)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return False, f"the real Linux network needs the `{tool}` program (iproute2)"
    try:
        with Testbed(senders=1, bandwidth=12.5e6, buffer=32 * 1024):
            pass
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        return False, f"cannot build a network namespace testbed here ({str(e).splitlines()[0]})"
    return True, ""


def transports() -> list[str]:
    """Congestion controls this kernel offers (dctcp only where built in)."""
    return netns.available_cc()


@functools.lru_cache(maxsize=1)
def kernel_hz() -> int | None:
    """The kernel's timer frequency (CONFIG_HZ): its RTO, RTOmin and probe timers count whole ticks
    of 1/HZ s. From /proc/config.gz or /boot/config-<release>; None where neither says."""
    import gzip
    release = os.uname().release
    for path, opener in (("/proc/config.gz", gzip.open), (f"/boot/config-{release}", open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=", 1)[1])
        except (OSError, ValueError):
            continue
    return None


LINK_DELAY = 5e-6                     # s per hop of the model's Linux testbed: veth and bridge, no wire
DELACK_MIN = 0.04                     # s, the kernel's delayed-ACK timer (TCP_DELACK_MIN) with the default RTOmin


def delayed_ack(rto_min: float, hz: int | None) -> float:
    """The receiver's delayed-ACK timer: TCP_DELACK_MIN (40 ms) by default; with `rto_min` on the route,
    this kernel keeps it below RTOmin: one tick under it, at least one tick. Measured on the testbed
    (kernel 6.18, HZ = 250; a lone full segment to a receiver that does not read): its ACK came 42 ms
    after it by default, 6 ms after it with rto_min 1ms or 5ms."""
    if abs(rto_min - 0.2) < 1e-9:
        return DELACK_MIN
    if not hz:
        return min(DELACK_MIN, rto_min)
    ticks = -(-rto_min * hz // 1)
    return min(DELACK_MIN, max(1, ticks - 1) / hz)


@dataclass(frozen=True, kw_only=True)
class _Port:
    """What the three settings share: the receiver port's `bandwidth` and drop-tail `buffer`, and the
    hosts' TCP (`transport`, `rto_min`). Kept as given; each setting checks them in its ``__post_init__``."""
    bandwidth: object = "100Mbit/s"
    buffer: object = "32K"
    transport: str = "cubic"
    rto_min: object = "200ms"


@dataclass(frozen=True, kw_only=True)
class _KernelPort(_Port):
    """A testbed port's knobs beyond the model's: ECN marking above `ecn_k` and the senders' `nic_rate`."""
    ecn: object = False
    ecn_k: object = None
    nic_rate: object = "link"


@dataclass(frozen=True, kw_only=True)
class ModelIncast(_Port):
    """``model``'s settings, the keywords of ``incast`` that the model reads (no ECN; the senders' NICs
    at the port's rate), plus the kernel's timer frequency `hz` and the model's `seed`. Frozen and
    checked when built (one ValueError naming the field); sizes, rates and times are kept as given."""
    senders: int = 8
    block: object = "64K"
    rounds: int = 20
    hz: int | None = None
    burst: object = None
    seed: int = 0

    def __post_init__(self):
        validate.whole(self.senders, "senders", 1)
        parse_bytes(self.block, "block")
        parse_bandwidth(self.bandwidth, "bandwidth"), parse_bytes(self.buffer, "buffer")
        parse_time(self.rto_min, "rto_min", allow_zero=False)
        validate.whole(self.rounds, "rounds", 1)
        if self.hz is not None:
            validate.positive(self.hz, "hz")
        if self.burst is not None:
            parse_bytes(self.burst, "burst")
        validate.whole(self.seed, "seed", 0)


def model(setup: ModelIncast | None = None, **settings) -> dict:
    """The packet model's prediction for the testbed `incast` measures, with the same keys.

    A ``ModelIncast``, or its fields as keywords (the same keywords as ``incast``'s, so one dict drives both).

    The model's transport gets Linux's loss recovery (`linux_tcp.LinuxTCP`: RACK, tail loss
    probes, SRTT + max(4 RTTVAR, RTOmin), timers in whole ticks of 1/`hz`, by default this kernel's
    CONFIG_HZ where it can be read; unrounded where not), the senders keep one connection across
    rounds with Linux's restart after idle, the receiver ACKs every second segment with the kernel's
    delayed-ACK timer (`delayed_ack`), the port is tbf's token bucket (`burst` bytes, the testbed's
    default unless given), the senders' NICs run at the port's rate (the testbed's default `nic_rate`),
    and the hops are veth's microseconds, not a wire's. `seed` seeds the
    model's own timing noise (its hosts' send jitter): at N = 8 and RTOmin 200 ms a run's goodput
    depends on it as Linux's does on its run, so compare means over seeds. Runs anywhere (no root);
    `link_fraction` is the model's goodput over the port's rate (its packets are all payload)."""
    cfg = validate.config(ModelIncast, setup, settings)
    senders, block, bandwidth, buffer, transport = cfg.senders, cfg.block, cfg.bandwidth, cfg.buffer, cfg.transport
    rto_min, rounds, hz, burst, seed = cfg.rto_min, cfg.rounds, cfg.hz, cfg.burst, cfg.seed
    from ..fabric import experiments
    n = validate.whole(senders, "senders", 1)
    block_b = parse_bytes(block, "block")
    rate, buffer_b = parse_bandwidth(bandwidth, "bandwidth"), parse_bytes(buffer, "buffer")
    rto = parse_time(rto_min, "rto_min", allow_zero=False)
    rounds = validate.whole(rounds, "rounds", 1)
    hz = kernel_hz() if hz is None else validate.positive(hz, "hz")
    burst_b = parse_bytes(burst, "burst") if burst is not None else netns.default_burst(rate)
    from ..fabric.congestion import Congestion
    switch = Congestion(transport, buffer=buffer_b, rto_min=rto, seed=validate.whole(seed, "seed", 0))
    run = experiments.incast(experiments.Incast(
        senders=n, block=block_b, rounds=int(rounds), bandwidth=rate, link_delay=LINK_DELAY, switch=switch,
        persistent=True, burst=burst_b, transport_options={"linux": True, "tick": 1 / hz if hz else 0.0},
        delayed_ack=delayed_ack(rto, hz)))
    s = run.summary()
    out = _result("model", _Setup(n=n, block=block_b, rate=rate, buffer=buffer_b, transport=transport, rto=rto,
                                 ecn=False),
                  run.step_times.tolist(), counts={"timeouts": s["timeouts"], "retransmissions": s["retransmissions"],
                                      "drops": s["drops"], "marks": 0},
                  wall_s=run.wall_s)
    out["link_fraction"] = out["goodput_Bps"] / rate
    out["ideal_round_s"] = n * block_b / rate
    out["hz"] = hz
    out["seed"] = seed
    out["round_timeouts"] = [0] * len(run.step_times)             # RTOs per round, as `incast` reports them
    for f in run.flows:
        out["round_timeouts"][int(f.name.split(".", 1)[0][1:])] += f.sender.timeouts
    return out


def _percentile(values: list[float], q: float) -> float:
    xs = sorted(values)
    k = (len(xs) - 1) * q                                   # linear interpolation, as numpy's default
    lo = int(k)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (k - lo)


def _connect(tb: Testbed) -> tuple[list[socket.socket], list[socket.socket], socket.socket]:
    """Sender sockets (in the sender namespaces) and their accepted peers (in the receiver's)."""
    with netns.InNamespace(tb.receiver_ns):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((tb.receiver_addr, 0))
    listener.listen(tb.senders)
    port = listener.getsockname()[1]
    senders = []
    for ns in tb.sender_ns:
        with netns.InNamespace(ns):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(10)
        s.connect((tb.receiver_addr, port))
        senders.append(s)
    listener.settimeout(10)
    by_addr = {}
    for _ in senders:
        c, (addr, _port) = listener.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        by_addr[addr] = c
    receivers = [by_addr[a] for a in tb.sender_addr]        # receivers[i] talks to sender i
    for s in senders + receivers:
        s.setblocking(False)
    return senders, receivers, listener


def _rounds(senders, receivers, block: int, rounds: int, deadline: float) -> list[float]:
    """Run synchronized rounds; returns each round's time in seconds (request to last byte)."""
    payload = memoryview(bytes(block))
    sink = bytearray(256 * 1024)
    sel = selectors.DefaultSelector()
    times = []
    try:
        for i, s in enumerate(senders):
            sel.register(s, selectors.EVENT_READ, ("sender", i))
        for i, c in enumerate(receivers):
            sel.register(c, selectors.EVENT_READ, ("receiver", i))
        for _ in range(rounds):
            to_send = [0] * len(senders)       # bytes left for sender i to write (0 until asked)
            to_recv = [block] * len(senders)   # bytes the receiver still waits for from sender i
            t0 = time.perf_counter()
            for c in receivers:
                c.send(b"g")                   # the request: one byte to every sender at once
            pending = len(senders)
            while pending:
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"incast: the run took longer than {MAX_WALL_S:.0f} s; stopped")
                for key, mask in sel.select(timeout=0.5):
                    role, i = key.data
                    sock = key.fileobj
                    if role == "receiver":
                        n = sock.recv_into(sink, min(len(sink), to_recv[i]))
                        if n == 0:
                            raise ConnectionError(f"incast: sender {i} closed its connection")
                        to_recv[i] -= n
                        if to_recv[i] == 0:
                            pending -= 1
                        continue
                    if mask & selectors.EVENT_READ and sock.recv(1):
                        to_send[i] = block     # asked: push the whole block
                    if to_send[i]:
                        try:
                            to_send[i] -= sock.send(payload[block - to_send[i]:])
                        except BlockingIOError:
                            pass
                        sel.modify(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if to_send[i] else 0), key.data)
            times.append(time.perf_counter() - t0)
    finally:
        sel.close()
    return times


@dataclass(frozen=True, kw_only=True)
class KernelIncast(_KernelPort):
    """``incast``'s settings, the CLI's --real flags: the testbed's shape (senders, the receiver port's
    bandwidth and buffer, tbf's burst, the senders' NICs), the kernel's transport and RTOmin, ECN, and the
    rounds (see ``incast``). Frozen; bad input is refused when built (one ValueError naming the field),
    whatever the machine; sizes, rates and times are kept as given. Not the model's ``fabric.Incast``: a
    testbed's knobs, in the CLI's units."""
    senders: int = 8
    block: object = "64K"
    rounds: int = 20
    burst: object = None

    def __post_init__(self):
        _nic(self.nic_rate)
        _parse(self)


def incast(setup: KernelIncast | None = None, **settings) -> dict:
    """Measure `rounds` synchronized incast rounds on a namespace testbed and report like the model.

    A ``KernelIncast``, or its fields as keywords. senders: pushing hosts; block: bytes each pushes per round; bandwidth: the receiver port's rate;
    buffer: that port's queue in bytes (drop-tail); transport: the kernel's congestion control
    (reno, cubic, bbr; dctcp where built in, which turns ECN on); rto_min: on every host's route
    ('200ms' is Linux's default, left untouched); ecn: mark CE above `ecn_k` bytes (DCTCP's K;
    default half the buffer) and negotiate ECN; `ecn` may also be the model's ECN(kmin, kmax) with
    kmin == kmax (this port marks at one threshold); nic_rate: each sender's NIC ('link': the port's
    rate, as on a switch whose ports all run at B and in the model; a rate; None or 'veth': an unshaped
    veth, whose pace is the machine's). The keywords are the CLI's flags. Returns goodput_Bps, completion_s {p50, p99, max, mean}, the
    ideal round (N x block x 1514/1448 / B), link_fraction, timeouts, retransmissions, drops, marks,
    pause_s (always 0: a Linux bridge drops, it never pauses) and wall_s: the model's keys."""
    cfg = validate.config(KernelIncast, setup, settings)
    transport, ecn, ecn_k, burst, rounds = cfg.transport, cfg.ecn, cfg.ecn_k, cfg.burst, cfg.rounds
    nic = _nic(cfg.nic_rate)
    n, block_b, rate, buffer_b, rto, threshold = _check(cfg)
    ecn = bool(ecn) or ecn_k is not None or transport == "dctcp"
    wall = time.perf_counter()
    with Testbed(n, rate, buffer_b, cc=transport, rto_min=None if abs(rto - 0.2) < 1e-9 else rto,
                 ecn=ecn, ecn_threshold=threshold,
                 burst=parse_bytes(burst, "burst") if burst is not None else None, nic_rate=nic) as tb:
        snd, rcv, listener = _connect(tb)
        try:
            before, port0 = tb.tcp_counters(), tb.port_stats()
            times = _rounds(snd, rcv, block=block_b, rounds=int(rounds), deadline=time.perf_counter() + MAX_WALL_S)
            after, port1 = tb.tcp_counters(), tb.port_stats()
        finally:
            for s in snd + rcv + [listener]:
                s.close()
    return _result("linux", _Setup(n=n, block=block_b, rate=rate, buffer=buffer_b, transport=transport, rto=rto,
                                        ecn=ecn),
                   times, counts={"timeouts": after.get("TcpExtTCPTimeouts", 0) - before.get("TcpExtTCPTimeouts", 0),
                    "retransmissions": after.get("TcpRetransSegs", 0) - before.get("TcpRetransSegs", 0),
                    "drops": port1.get("drops", 0) - port0.get("drops", 0), "marks": port1["marks"] - port0["marks"]},
                   wall_s=time.perf_counter() - wall)


def _nic(nic_rate):
    """The testbed's nic_rate from the keyword: 'link', 'veth' or None (unshaped), or a bandwidth."""
    return nic_rate if nic_rate in (None, "link", "veth") else parse_bandwidth(nic_rate, "nic_rate")


def _check(cfg: KernelIncast | GlooPush, who="senders", what="block"):
    """Parse and check the CLI's options (bad input first, whatever the machine), then the machine."""
    parsed = _parse(cfg, who, what)
    ok, why = available()
    if not ok:
        raise Unavailable(why)
    if cfg.transport not in transports():
        raise ValueError(f"transport: {cfg.transport!r} is not in this kernel (it has {', '.join(transports())})")
    return parsed


def _parse(cfg: KernelIncast | GlooPush, who="senders", what="block"):
    """The CLI's options parsed and checked, whatever the machine: (n, block, rate, buffer, rto, threshold).
    `who` and `what` name the fields that hold the hosts and the bytes each pushes (GlooPush: workers, shard)."""
    senders, ecn, ecn_k = getattr(cfg, who), cfg.ecn, cfg.ecn_k
    n = int(senders)
    if not 1 <= n <= netns.MAX_SENDERS:
        raise ValueError(f"{who}: must be 1 to {netns.MAX_SENDERS}, got {senders!r}")
    block_b = parse_bytes(getattr(cfg, what), what)
    rate, buffer_b = parse_bandwidth(cfg.bandwidth, "bandwidth"), parse_bytes(cfg.buffer, "buffer")
    rto = parse_time(cfg.rto_min, "rto_min", allow_zero=False)
    if int(cfg.rounds) < 1:
        raise ValueError(f"rounds: must be at least 1, got {cfg.rounds!r}")
    threshold = parse_bytes(ecn_k, "ecn_k") if ecn_k is not None else None
    if hasattr(ecn, "kmin"):                             # the model's ECN(kmin, kmax, pmax)
        if ecn.kmax != ecn.kmin:
            raise ValueError("ecn-kmin: the real port marks at one threshold K (DCTCP-style); give kmin == kmax")
        threshold = int(ecn.kmin)
    return n, block_b, rate, buffer_b, rto, threshold


class _Setup(NamedTuple):
    """What one measurement ran with, as its row reports it (bytes, bytes/s, seconds)."""
    n: int
    block: int
    rate: float
    buffer: int
    transport: str
    rto: float
    ecn: bool


def _result(engine: str, setup: _Setup, times, *, counts: dict, wall_s: float) -> dict:
    """One row, the same keys for the model and the kernel: `counts` has timeouts, retransmissions,
    drops and marks."""
    n, block, rate, buffer, transport, rto, ecn = setup
    goodput = n * block * len(times) / sum(times)
    return {
        "engine": engine, "senders": n, "block": block, "bandwidth_Bps": rate, "buffer": buffer,
        "transport": transport, "rto_min_s": rto, "ecn": ecn, "rounds": len(times),
        "goodput_Bps": goodput, "link_fraction": goodput * WIRE_PER_SEGMENT / rate,
        "completion_s": {"p50": _percentile(times, 0.5), "p99": _percentile(times, 0.99),
                         "max": max(times), "mean": sum(times) / len(times)},
        "ideal_round_s": n * block * WIRE_PER_SEGMENT / rate, "round_s": list(times),
        "timeouts": counts["timeouts"], "retransmissions": counts["retransmissions"], "drops": counts["drops"],
        "marks": counts["marks"], "pause_s": 0.0,
        "wall_s": wall_s,
    }


@dataclass(frozen=True, kw_only=True)
class GlooPush(_KernelPort):
    """``ps_push``'s settings: ``KernelIncast``'s with `workers` gloo ranks pushing a `shard` each round,
    the `fixes` measured afterwards, and the ranks' `timeout_s`. Frozen; bad input is refused when built
    (one ValueError naming the field), whatever the machine; sizes, rates and times are kept as given."""
    workers: int = 8
    shard: object = "64K"
    rounds: int = 10
    fixes: tuple = ()
    timeout_s: float = 90.0

    def __post_init__(self):
        _nic(self.nic_rate)
        _, shard_b, _, buffer_b, rto, _ = _parse(self, "workers", "shard")
        if shard_b % 4:
            raise ValueError(f"shard: must be a whole number of float32 elements (a multiple of 4 bytes), "
                             f"got {self.shard!r}")
        self.phases(rto, buffer_b)

    def phases(self, rto: float, buffer_b: int) -> list:
        """(rto_min in s, buffer in bytes) of each fix, after the base setup's."""
        steps = []
        for fix in self.fixes:
            unknown = set(fix) - {"rto_min", "buffer"}
            if unknown:
                raise ValueError(f"fixes: only rto_min and buffer can change between phases, got {sorted(unknown)}")
            steps.append((parse_time(fix.get("rto_min", rto), "rto_min", allow_zero=False),
                          parse_bytes(fix.get("buffer", buffer_b), "buffer")))
        return steps


def ps_push(setup: GlooPush | None = None, **settings) -> dict:
    """The same incast with real gloo ranks: `workers` ranks in the sender namespaces push `shard`
    bytes each round to a server rank in the receiver's (see `_gloo_push.py`).

    A ``GlooPush``, or its fields as keywords. Same keys as `incast` (block = shard). `fixes`, e.g. ({"rto_min": "1ms"}, {"buffer": "1M"}), are
    measured afterwards on the same ranks and connections, each against the base setup, and returned
    under "fixes" (each with its "fix"). Timeouts and retransmissions are the workers' over the measured
    rounds; drops and marks the port's over each phase, including its one unmeasured round (and,
    for the base, gloo's setup)."""
    push = validate.config(GlooPush, setup, settings)
    transport, ecn, ecn_k, rounds, fixes = push.transport, push.ecn, push.ecn_k, push.rounds, push.fixes
    timeout_s = push.timeout_s
    nic = _nic(push.nic_rate)
    n, shard_b, rate, buffer_b, rto, threshold = _check(push, "workers", "shard")
    steps = push.phases(rto, buffer_b)                    # (rto_min in s or None, buffer in bytes) per phase
    ecn = bool(ecn) or ecn_k is not None or transport == "dctcp"
    base_rto = None if abs(rto - 0.2) < 1e-9 else rto
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="netlab-gloo-") as tmp, \
            Testbed(n, rate, buffer_b, cc=transport, rto_min=base_rto, ecn=ecn, ecn_threshold=threshold,
                    nic_rate=nic) as tb:
        cfg = {"server_ns": tb.receiver_ns, "worker_ns": tb.sender_ns, "shard": shard_b, "rounds": int(rounds),
               "phases": 1 + len(steps), "store": os.path.join(tmp, "store"), "timeout_s": float(timeout_s)}
        ports = [tb.port_stats()]
        deadline = time.monotonic() + timeout_s + 30
        proc = subprocess.Popen([sys.executable, "-m", "netlab.linuxnet._gloo_push", json.dumps(cfg)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for k, (step_rto, step_buffer) in enumerate(steps, start=1):
                while not os.path.exists(os.path.join(tmp, f"phase{k}.done")):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
                ports.append(tb.port_stats())
                tb.set_rto_min(None if abs(step_rto - 0.2) < 1e-9 else step_rto)
                tb.set_buffer(step_buffer)
                open(os.path.join(tmp, f"phase{k}.go"), "w").close()
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise RuntimeError((err.strip().splitlines() or ["gloo push failed"])[-1])
        ports.append(tb.port_stats())
    records = json.loads(out.strip().splitlines()[-1])
    results = []
    for p, (p_rto, p_buffer) in enumerate([(rto, buffer_b)] + steps):
        counts = {"timeouts": sum(r["counters"][p]["TcpExtTCPTimeouts"] for r in records[1:]),
                  "retransmissions": sum(r["counters"][p]["TcpRetransSegs"] for r in records[1:]),
                  "drops": ports[p + 1].get("drops", 0) - ports[p].get("drops", 0),
                  "marks": ports[p + 1]["marks"] - ports[p]["marks"]}
        results.append(_result("linux-gloo", _Setup(n=n, block=shard_b, rate=rate, buffer=p_buffer,
                                                      transport=transport, rto=p_rto, ecn=ecn),
                               records[0]["round_s"][p], counts=counts, wall_s=time.perf_counter() - wall))
    for res, fix in zip(results[1:], fixes):
        res["fix"] = dict(fix)
    results[0]["fixes"] = results[1:]
    return results[0]
