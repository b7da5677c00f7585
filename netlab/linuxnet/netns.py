"""A shaped switch made of Linux network namespaces: N senders and one receiver behind a bridge.

    with Testbed(senders=8, bandwidth=12.5e6, buffer=32 * 1024, cc="cubic", rto_min=None) as tb:
        tb.sender_ns[0], tb.receiver_ns, tb.receiver_addr      # names and 10.77.0.x addresses

Layout (every interface lives inside one of this run's namespaces; the host's namespace, routes and
sysctls are never touched):

    nl-<pid>-<k>-s0  eth0 10.77.0.1  ──┐
    ...                                ├── ps0..ps{N-1}  br0  prx ── eth0 10.77.0.254  nl-<pid>-<k>-rx
    nl-<pid>-<k>-s{N-1} eth0 10.77.0.N ┘          (nl-<pid>-<k>-br)
                                                  prx egress: tbf rate B, queue `buffer` bytes

* The switch's output port toward the receiver (`prx`) is a token bucket (tbf) at the link rate
  with a drop-tail queue of `buffer` bytes: the shallow buffer of an incast (Vasudevan et al.,
  SIGCOMM'09). tbf counts L2 bytes (1514 per full 1448-byte TCP segment); its bucket (`burst`,
  2 ms of rate, >= 16 KB) lets that much through at once after a pause, on top of the queue.
* Each host namespace's route to 10.77.0.0/24 carries the congestion control (`congctl`, because
  this kernel's net.ipv4.tcp_congestion_control is not writable per namespace) and, optionally,
  `rto_min` (Linux's default RTOmin is 200 ms; the effective minimum is a few jiffies).
* ECN: tcp_ecn=1 in every host namespace, and a marker on the port. This kernel has no marking
  qdisc (red, fq_codel, pie, choke are absent), so the marker is a "phantom queue" (Lu et al.'s
  HULL idea): a token bucket at 95 % of the link rate, `ecn_threshold` bytes deep, in the bridge's
  forward path (iptables hashlimit); ECT packets that find it empty get CE (iptables TOS target).
  With ECN on, the hosts send MTU-sized packets (no GSO) so the bucket can count frames.
  It needs the `iptables` program.
* Each sender's NIC (its eth0's egress) is a tbf at `nic_rate`, the port's rate by default, with a
  two-frame bucket and a 4 MB queue that never drops: every host of a real switch sends through a
  port of its own, so N senders reach the switch at N x B at most, as the packet model's senders do.
  A veth alone has no rate: a sender's window would reach the port within its send() call, in an
  order and at a pace set by the machine's scheduler, and the incast's goodput at N = 8 and RTOmin
  200 ms moved by half between two machines of the same kind (docs/fabric.md). `nic_rate="veth"`
  (or None) leaves the veths unshaped.
* The hosts send MTU-sized packets (gso_max_segs 1 on every host's eth0), always: over veth a
  sender's window otherwise crosses the bridge as one 64 KB GSO super-packet, and tbf queues and
  drops it whole (up to its bucket size) or splits it, which no switch does; a real port sees
  1514-byte frames, and drops them one by one.
* While a testbed is open, the thread that opened it runs at nice -10 (`NICE`; it is root already), and
  so does every process it starts meanwhile (a child inherits its parent thread's nice value); closing
  it restores the value. Times here are the wall clock: on a busy machine a sender or the receiver
  that waits for a CPU stretches the round it is in. Beside 12 busy processes on this project's
  2-core machine, one sender at the port's rate got 0.59 of the 100 Mbit/s link at nice 0 (best of
  three rounds of six) and the link's rate at nice -10. The kernel's own work on the packets (veth,
  bridge, tbf) runs in softirq and is not changed by it.
* Teardown on success, exceptions, Ctrl-C and SIGTERM (a handler turns SIGTERM into SystemExit
  while the testbed is open): processes left inside the namespaces are killed, the namespaces
  deleted (deleting a namespace deletes its veths and its bridge). A namespace named after a pid
  that no longer runs is swept away when the next testbed opens.
Left out: PFC (veth has no dcb), netem delay (this kernel has no netem), IPv6.

One concept: the namespace testbed, its build, shaping, counters and teardown (with ``reap`` for the
ranks launched in it), one lifetime.
"""
from __future__ import annotations

import atexit
import ctypes
import itertools
import os
import re
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass

from .. import validate
from ..runtime.rundir import alive as _pid_alive    # the same liveness rule as the driver folders

NETNS_DIR = "/var/run/netns"
PREFIX = "nl-"                              # every namespace this module creates: nl-<pid>-<k>-<role>
SUBNET = "10.77.0"                          # private addresses, only inside the namespaces
RECEIVER_ADDR = f"{SUBNET}.254"
MAX_SENDERS = 200
NICE = -10                                  # the opening thread's nice value while a testbed is open
_CLONE_NEWNET = 0x40000000
_seq = itertools.count()
_open: set["Testbed"] = set()               # testbeds to tear down at interpreter exit
_libc = ctypes.CDLL(None, use_errno=True)


def _run(args: list[str], input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(args, input=input, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}...: {r.stderr.strip() or r.stdout.strip()}")
    return r


class InNamespace:
    """Run this thread inside namespace `name` for the duration of a with-block.

    Sockets created inside stay in that namespace after the block ends, and /proc/thread-self/net
    and /proc/sys/net show that namespace's counters and settings while inside."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self._home = os.open(f"/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(os.path.join(NETNS_DIR, self.name), os.O_RDONLY)
        try:
            if _libc.setns(fd, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {self.name}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            if _libc.setns(self._home, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back home failed")
        finally:
            os.close(self._home)


def sysctl(ns: str, key: str, value) -> None:
    with InNamespace(ns), open("/proc/sys/" + key.replace(".", "/"), "w") as f:
        f.write(str(value))


def read_counters(ns: str) -> dict[str, int]:
    """The namespace's TCP counters: /proc/net/netstat (TcpExt*) and /proc/net/snmp (Tcp*)."""
    out: dict[str, int] = {}
    with InNamespace(ns):
        for fname in ("netstat", "snmp"):
            with open(f"/proc/thread-self/net/{fname}") as f:
                lines = f.read().splitlines()
            for head, vals in zip(lines[::2], lines[1::2]):
                group, names = head.split(":", 1)
                for k, v in zip(names.split(), vals.split(":", 1)[1].split()):
                    out[group + k] = int(v)
    return out


def _delete_namespace(name: str) -> None:
    """Kill what still runs inside (processes this module's users started there), then delete."""
    pids = _run(["ip", "netns", "pids", name], check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _run(["ip", "netns", "delete", name], check=False)


def reap(pids) -> None:
    """SIGKILL each child process this process forked (one that already exited is fine), then wait for
    it, so none is left running or a zombie: the ranks a testbed's launcher forked into the namespaces."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


def ours() -> list[str]:
    """Namespaces this module created that still exist (any owner)."""
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(PREFIX))
    except FileNotFoundError:
        return []


def sweep_stale() -> list[str]:
    """Delete namespaces whose owner pid is gone (a run killed with SIGKILL). Returns their names."""
    gone = []
    for name in ours():
        m = re.match(PREFIX + r"(\d+)-", name)
        if m and not _pid_alive(int(m.group(1)), ""):
            _delete_namespace(name)
            gone.append(name)
    return gone


def available_cc() -> list[str]:
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        return f.read().split()


def ecn_marker() -> str | None:
    """How this machine can mark CE on the port, or None: 'iptables' (a phantom queue)."""
    return "iptables" if shutil.which("iptables") else None


def default_burst(bandwidth: float) -> int:
    """tbf's bucket in bytes for a port of `bandwidth` bytes/s: 2 ms of rate, at least 16 KB."""
    return int(max(16 * 1024, bandwidth * 2e-3))


NIC_BURST = 2 * 1514                        # bytes a sender's NIC passes at once: two frames
NIC_QUEUE = 4 * 1024 * 1024                 # bytes its queue holds: deep enough never to drop (a drop in a
                                            # host's own queue is a local signal no switch port gives)


@dataclass(frozen=True, kw_only=True)
class TestbedOptions:
    """A ``Testbed``'s ip/tc options past its shape (senders, bandwidth, buffer, cc): RTOmin on every
    host's route (None: the kernel's 200 ms), ECN marking above `ecn_threshold` bytes (None: half the
    buffer), tbf's `burst` (None: ``default_burst``) and the senders' NICs (`nic_rate`: 'link', the
    port's rate; 'veth' or None, unshaped; or bytes/s). Frozen and checked when built (one ValueError
    naming the field)."""
    rto_min: float | None = None
    ecn: bool = False
    ecn_threshold: int | None = None
    burst: int | None = None
    nic_rate: float | str | None = "link"

    def __post_init__(self):
        if self.rto_min is not None:
            validate.positive(self.rto_min, "rto_min", 1.0)        # seconds
        if self.ecn and ecn_marker() is None:
            raise ValueError("ecn: this kernel has no ECN-marking qdisc and the `iptables` program is not installed")
        nic = self.nic_rate
        if nic not in ("link", "veth", None) and (isinstance(nic, str) or not nic > 0):
            raise ValueError(f"nic_rate: must be 'link', 'veth', None or bytes/s greater than zero, got {nic!r}")


class Testbed:
    """N sender namespaces + 1 receiver namespace behind a bridge whose receiver port is shaped."""

    def __init__(self, senders: int, bandwidth: float, buffer: int, cc: str = "cubic", *,
                 options: TestbedOptions | None = None, **settings):
        """`options`: a ``TestbedOptions``, or its fields as keywords (rto_min, ecn, ecn_threshold, burst,
        nic_rate)."""
        if not 1 <= int(senders) <= MAX_SENDERS:
            raise ValueError(f"senders: must be 1 to {MAX_SENDERS}, got {senders!r}")
        validate.positive(bandwidth, "bandwidth")
        validate.number(buffer, "buffer", 1514)                 # at least one 1514-byte frame
        if cc not in available_cc():
            raise ValueError(f"cc: {cc!r} is not in this kernel (it has {' '.join(available_cc())})")
        opts = validate.config(TestbedOptions, options, settings)
        rto_min, ecn, ecn_threshold, burst, nic_rate = (opts.rto_min, opts.ecn, opts.ecn_threshold, opts.burst,
                                                        opts.nic_rate)
        if nic_rate == "link":
            nic_rate = bandwidth
        elif nic_rate == "veth":
            nic_rate = None
        self.senders, self.bandwidth, self.buffer = int(senders), float(bandwidth), int(buffer)
        self.nic_rate = None if nic_rate is None else float(nic_rate)
        self.cc, self.rto_min, self.ecn = cc, rto_min, bool(ecn)
        self.ecn_threshold = int(ecn_threshold if ecn_threshold is not None else max(buffer // 2, 3028))
        # tbf's bucket in bytes: 2 ms of rate, at least 16 KB, or a loaded machine leaves the link
        # idle between the qdisc's timer ticks. A full bucket passes `burst` bytes at once, so a
        # round that starts after a pause meets a queue of about buffer + burst.
        self.burst = int(burst if burst is not None else default_burst(self.bandwidth))
        base = f"{PREFIX}{os.getpid()}-{next(_seq)}"
        self.bridge_ns, self.receiver_ns = base + "-br", base + "-rx"
        self.sender_ns = [f"{base}-s{i}" for i in range(self.senders)]
        self.sender_addr = [f"{SUBNET}.{i + 1}" for i in range(self.senders)]
        self.receiver_addr = RECEIVER_ADDR
        self.ifname = "eth0"                 # the host interface's name in every host namespace
        self._created: list[str] = []
        self._old_term = None
        self._old_nice = None                   # (thread id, nice value) while raised

    # ---- lifecycle ----
    def __enter__(self) -> "Testbed":
        sweep_stale()
        self._catch_sigterm()
        _open.add(self)
        try:
            self._build()
            self._raise_priority()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _raise_priority(self) -> None:
        """This thread to nice `NICE` (see the module's text); left as it is where that is not allowed."""
        tid = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, tid)
        if before <= NICE:
            return
        try:
            os.setpriority(os.PRIO_PROCESS, tid, NICE)
        except OSError:                          # no CAP_SYS_NICE (a container that allows namespaces only)
            return
        self._old_nice = (tid, before)

    def _catch_sigterm(self) -> None:
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            def on_term(signum, frame):
                raise SystemExit(128 + signum)
            self._old_term = signal.signal(signal.SIGTERM, on_term)

    def close(self) -> None:
        """Delete every namespace of this testbed (idempotent; signals held off meanwhile)."""
        held = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            for name in reversed(self._created):
                _delete_namespace(name)
            self._created.clear()
            _open.discard(self)
            if self._old_nice is not None:
                tid, before = self._old_nice
                self._old_nice = None
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, before)
                except OSError:                  # that thread has ended: nothing to restore
                    pass
            if self._old_term is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, self._old_term)
                self._old_term = None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    # ---- building ----
    @property
    def hosts(self) -> list[str]:
        return [self.receiver_ns] + self.sender_ns

    def _build(self) -> None:
        for name in [self.bridge_ns] + self.hosts:
            _run(["ip", "netns", "add", name])
            self._created.append(name)
        links = ["link add br0 type bridge", "link set br0 up",
                 f"link add prx type veth peer name {self.ifname} netns {self.receiver_ns}",
                 "link set prx master br0 up"]
        for i, ns in enumerate(self.sender_ns):
            links += [f"link add ps{i} type veth peer name {self.ifname} netns {ns}", f"link set ps{i} master br0 up"]
        _run(["ip", "-n", self.bridge_ns, "-batch", "-"], input="\n".join(links) + "\n")
        for ns, addr in zip(self.hosts, [self.receiver_addr] + self.sender_addr):
            if os.path.exists("/proc/sys/net/ipv6"):              # quiet: no router solicitations
                sysctl(ns, "net.ipv6.conf.all.disable_ipv6", 1)
            sysctl(ns, "net.ipv4.tcp_ecn", 1 if self.ecn else 0)
            _run(["ip", "-n", ns, "-batch", "-"], input="\n".join([
                "link set lo up", f"addr add {addr}/24 dev {self.ifname}", f"link set {self.ifname} gso_max_segs 1",
                f"link set {self.ifname} up"]) + "\n")
        self.set_rto_min(self.rto_min)
        self._shape("add")
        if self.nic_rate is not None:
            for ns in self.sender_ns:            # each sender's NIC: the port's rate, a two-frame bucket
                _run(["tc", "-n", ns, "qdisc", "add", "dev", self.ifname, "root", "tbf", "rate",
                      f"{int(self.nic_rate * 8)}bit", "burst", str(NIC_BURST), "limit", str(NIC_QUEUE)])
        if self.ecn:
            self._add_phantom_queue()

    def _shape(self, verb: str) -> None:
        # the switch's port toward the receiver: rate in bit/s, burst and queue (limit) in bytes
        _run(["tc", "-n", self.bridge_ns, "qdisc", verb, "dev", "prx", "root", "handle", "1:", "tbf",
              "rate", f"{int(self.bandwidth * 8)}bit", "burst", str(self.burst), "limit", str(self.buffer)])

    def set_buffer(self, buffer: int) -> None:
        """Change the port's queue (bytes) in place; open connections keep running."""
        validate.number(buffer, "buffer", 1514)                 # at least one 1514-byte frame
        self.buffer = int(buffer)
        self._shape("change")

    def set_rto_min(self, rto_min: float | None) -> None:
        """Set every host's route: congctl and rto_min (None: Linux's 200 ms). Open connections
        pick the new route up at their next route check (the change bumps the routing generation)."""
        if rto_min is not None:
            validate.positive(rto_min, "rto_min", 1.0)             # seconds
        self.rto_min = rto_min
        opts = f"congctl {self.cc}" + (f" rto_min {rto_min * 1e3:g}ms" if rto_min else "")
        for ns, addr in zip(self.hosts, [self.receiver_addr] + self.sender_addr):
            _run(["ip", "-n", ns, "route", "replace", f"{SUBNET}.0/24", "dev", self.ifname, "proto", "kernel",
                  "scope", "link", "src", addr, *opts.split()])

    def _add_phantom_queue(self) -> None:
        # marks CE once the traffic to prx runs more than ecn_threshold bytes above 95 % of the rate:
        # a DCTCP-style single threshold K on a virtual queue drained a little slower than the link.
        # Counted in full frames, as xt_hashlimit's bucket is exactly `burst` deep only in packet
        # mode (its byte mode and nftables' limit hold a second of rate on top: far too deep);
        # the hosts send MTU-sized packets (gso_max_segs 1, set in _build). br_netfilter hands
        # bridged IPv4 packets to iptables.
        with InNamespace(self.bridge_ns), open("/proc/sys/net/bridge/bridge-nf-call-iptables") as f:
            handed = f.read().strip() == "1"                 # a new namespace's default (per namespace since 5.3)
        if not handed:
            sysctl(self.bridge_ns, "net.bridge.bridge-nf-call-iptables", 1)
        per_s = max(1, int(self.bandwidth * 0.95 / 1514))    # frames per second
        depth = max(1, round(self.ecn_threshold / 1514))     # frames
        for ect in ("1", "2"):                               # ECT(1) and ECT(0) packets
            _run(["ip", "netns", "exec", self.bridge_ns, "iptables", "-t", "mangle", "-A", "FORWARD",
                  "-m", "physdev", "--physdev-out", "prx", "-m", "ecn", "--ecn-ip-ect", ect,
                  "-m", "hashlimit", "--hashlimit-above", f"{per_s}/sec", "--hashlimit-burst", str(depth),
                  "--hashlimit-name", f"nlecn{ect}", "-j", "TOS", "--set-tos", "0x03/0x03"])

    # ---- observing ----
    def port_stats(self) -> dict[str, int]:
        """The shaped port's qdisc counters: bytes/packets sent, drops, overlimits; ECN marks."""
        text = _run(["tc", "-s", "-n", self.bridge_ns, "qdisc", "show", "dev", "prx"]).stdout
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", text)
        stats = dict(zip(("sent_bytes", "sent_packets", "drops", "overlimits"), map(int, m.groups()))) if m else {}
        stats["marks"] = 0
        if self.ecn:
            text = _run(["ip", "netns", "exec", self.bridge_ns, "iptables", "-t", "mangle", "-L", "FORWARD",
                         "-v", "-x", "-n"]).stdout
            stats["marks"] = sum(int(line.split()[0]) for line in text.splitlines() if "TOS" in line)
        return stats

    def tcp_counters(self, namespaces: list[str] | None = None) -> dict[str, int]:
        """TCP counters summed over the given host namespaces (default: the senders)."""
        total: dict[str, int] = {}
        for ns in namespaces if namespaces is not None else self.sender_ns:
            for k, v in read_counters(ns).items():
                total[k] = total.get(k, 0) + v
        return total


@atexit.register
def _close_all() -> None:
    for tb in list(_open):
        tb.close()
