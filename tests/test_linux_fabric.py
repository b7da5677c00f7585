"""The real Linux network (netlab.linuxnet.linux / netns): teardown in every case, the incast collapse
of the kernel's TCP and its fixes, and the same collapse with real gloo ranks.

Everything here needs root and network namespaces; elsewhere (Binder, laptops, non-root CI) each
test is skipped with the one-line reason `linux.available()` gives. References: the ideal round
N x block x 1514/1448 / B (tbf counts L2 frames: 1514 bytes per 1448-byte segment) for a buffer
deep enough to drop nothing, and Vasudevan et al. (SIGCOMM'09) for the qualitative collapse with
RTOmin = 200 ms and its cure with a 1 ms RTOmin.
"""
import functools
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time
import types
import warnings

import pytest

from netlab.linuxnet import linux, netns

OK, WHY = linux.available()
needs_linux = pytest.mark.skipif(not OK, reason=WHY or "real Linux network unavailable")
if not OK:                                   # said once in the warnings summary, even under -q
    warnings.warn(f"real Linux network tests skipped: {WHY}", pytest.PytestWarning)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A child that imports only netlab.fabric (a stub parent package keeps torch out: starts in ~0.1 s).
CHILD = textwrap.dedent(f"""
    import sys, types, time
    pkg = types.ModuleType("netlab"); pkg.__path__ = [{os.path.join(ROOT, "netlab")!r}]; sys.modules["netlab"] = pkg
    from netlab.linuxnet import linux, netns
    what = sys.argv[1]
    if what == "testbed":
        with netns.Testbed(4, 12.5e6, 32768):
            print("ready", flush=True)
            time.sleep(60)
    elif what == "incast":
        linux.incast(senders=8, rounds=2000)
    elif what == "gloo":
        linux.ps_push(workers=4, rounds=2000, timeout_s=60)
""")


def host_links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return sorted(line.split(":")[1].strip() for line in out.splitlines())


def namespaces_of(pid: int) -> list[str]:
    return [n for n in netns.ours() if n.startswith(f"{netns.PREFIX}{pid}-")]


def start_child(what: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-c", CHILD, what], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)


def wait_until(cond, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


@functools.cache
def _incast(setup: linux.KernelIncast) -> dict:
    return linux.incast(setup)


def kernel_incast(**settings) -> dict:
    """``linux.incast(**settings)``, measured once per setup in this module: the tests that read the same
    setup (32 senders at RTOmin 200 ms and at 1 ms; 8 senders at 200 ms) read one run of it, as each would
    read a run of its own. Setups are compared as ``KernelIncast``s, defaults filled in."""
    return _incast(linux.KernelIncast(**settings))


def binomial_band(n: int, q_low: float, q_high: float, p: float = 1e-4) -> tuple[int, int]:
    """(lo, hi): for a count X of n independent rounds, each slow with a probability anywhere in
    [q_low, q_high], P(X < lo) + P(X > hi) < p. P(X < lo) is largest at q_low and P(X > hi) at q_high,
    so each is bounded there by p/2, from the exact binomial distribution."""
    def at_most(k: int, q: float) -> float:
        return sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(k + 1)) if k >= 0 else 0.0
    lo = 0
    while lo < n and at_most(lo, q_low) < p / 2:
        lo += 1
    hi = n
    while hi > 0 and 1 - at_most(hi - 1, q_high) < p / 2:
        hi -= 1
    return lo, hi


def rto_rounds(result: dict) -> int:
    """Rounds that waited out a 200 ms RTO: longer than 150 ms where the ideal round is 22-44 ms (on the
    kernel this matched the per-round TcpExtTCPTimeouts deltas on 300 of 300 rounds; docs/fabric.md)."""
    return sum(t > 0.150 for t in result["round_s"])


def test_binomial_band_is_the_exact_tail():
    lo, hi = binomial_band(150, 0.08, 0.25)
    assert (lo, hi) == (1, 59)
    assert 0.92 ** 150 < 5e-5 and sum(math.comb(150, i) * 0.25 ** i * 0.75 ** (150 - i) for i in range(60, 151)) < 5e-5


def test_available_names_its_reason(monkeypatch):
    linux.available.cache_clear()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    try:
        ok, why = linux.available()
        assert not ok and "root" in why and "\n" not in why
        with pytest.raises(linux.Unavailable, match="root"):
            linux.incast(senders=2, rounds=1)
    finally:
        linux.available.cache_clear()


@pytest.mark.parametrize("kwargs, name", [({"senders": 0}, "senders"), ({"block": "-1K"}, "block"),
                                          ({"buffer": "lots"}, "buffer"), ({"bandwidth": "0Gbit/s"}, "bandwidth"),
                                          ({"rto_min": "0ms"}, "rto_min"), ({"rounds": 0}, "rounds"),
                                          ({"ecn_k": "-5K"}, "ecn_k"), ({"nic_rate": "fast"}, "nic_rate"),
                                          ({"nic_rate": "-5Mbit/s"}, "nic_rate"),
                                          ({"ecn": types.SimpleNamespace(kmin=5e3, kmax=200e3)}, "ecn-kmin")])
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        linux.incast(**kwargs)


@pytest.mark.parametrize("kwargs, name", [({"senders": 0}, "senders"), ({"block": "-1K"}, "block"),
                                          ({"hz": 0}, "hz"), ({"rto_min": "0ms"}, "rto_min"),
                                          ({"burst": "lots"}, "burst"), ({"transport": "vegas"}, "transport")])
def test_model_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        linux.model(rounds=1, **kwargs)


@needs_linux
def test_unknown_transport_is_refused():
    with pytest.raises(ValueError, match="^transport:"):
        linux.incast(transport="dcqcn", rounds=1)


@needs_linux
def test_testbed_is_private_and_torn_down_on_success_and_failure():
    links = host_links()
    with netns.Testbed(3, 12.5e6, 32768, rto_min=0.001) as tb:
        assert set(tb.hosts + [tb.bridge_ns]) <= set(netns.ours())
        assert host_links() == links                               # nothing in the host's namespace
        route = subprocess.run(["ip", "-n", tb.sender_ns[0], "route"], capture_output=True, text=True).stdout
        assert "rto_min lock 1ms" in route and "congctl cubic" in route
    assert namespaces_of(os.getpid()) == []
    with pytest.raises(ZeroDivisionError):
        with netns.Testbed(2, 12.5e6, 32768):
            1 / 0
    assert namespaces_of(os.getpid()) == [] and host_links() == links


@needs_linux
def test_an_open_testbed_runs_its_thread_and_children_at_a_raised_priority_and_restores_it():
    """While open, the opening thread and a process it starts run at nice -10 or above it (the kernel's own view:
    /proc's stat of the child; a suite started at a higher priority keeps it); closed, or left by an exception,
    the thread is back at its nice value."""
    tid = __import__("threading").get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    with netns.Testbed(1, 12.5e6, 32768):
        assert os.getpriority(os.PRIO_PROCESS, tid) == min(before, -10)
        child = subprocess.run(["sh", "-c", "cut -d' ' -f19 /proc/self/stat"], capture_output=True, text=True)
        assert int(child.stdout) == min(before, -10)
    assert os.getpriority(os.PRIO_PROCESS, tid) == before
    with pytest.raises(ZeroDivisionError):
        with netns.Testbed(1, 12.5e6, 32768):
            1 / 0
    assert os.getpriority(os.PRIO_PROCESS, tid) == before


@needs_linux
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_each_connection_gets_the_requested_congestion_control(cc):
    """The kernel reports (TCP_CONGESTION) the route's congctl on both ends of a connection."""
    with netns.Testbed(1, 12.5e6, 32768, cc=cc) as tb:
        with netns.InNamespace(tb.receiver_ns):
            listener = socket.create_server((tb.receiver_addr, 0))
        with netns.InNamespace(tb.sender_ns[0]):
            sender = socket.socket()
        with listener, sender:
            sender.connect(listener.getsockname())
            receiver, _ = listener.accept()
            with receiver:
                for sock in (sender, receiver):
                    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0") == cc.encode()


@needs_linux
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_the_testbed_down(sig):
    links = host_links()
    child = start_child("testbed")
    try:
        assert child.stdout.readline().strip() == "ready"
        assert len(namespaces_of(child.pid)) == 6                  # bridge, receiver, 4 senders
        child.send_signal(sig)
        child.wait(timeout=20)
    finally:
        child.kill()
    assert namespaces_of(child.pid) == [] and host_links() == links


@needs_linux
def test_sigkilled_owner_is_swept():
    child = start_child("testbed")
    try:
        assert child.stdout.readline().strip() == "ready"
    finally:
        child.kill()
        child.wait()
    assert namespaces_of(child.pid)                                 # SIGKILL leaves them behind...
    netns.sweep_stale()
    assert namespaces_of(child.pid) == []                          # ...until the next testbed's sweep


@needs_linux
@pytest.mark.slow
@pytest.mark.parametrize("what, sig", [("incast", signal.SIGINT), ("gloo", signal.SIGTERM)])
def test_interrupted_run_leaves_nothing(what, sig):
    """Ctrl-C in the middle of an incast, SIGTERM in the middle of a gloo push: no namespace, no rank."""
    links = host_links()
    child = start_child(what)
    try:
        def busy():                                                 # the receiver namespace holds processes
            names = [n for n in namespaces_of(child.pid) if n.endswith("-rx")]
            return bool(names) and (what == "incast" or subprocess.run(
                ["ip", "netns", "pids", names[0]], capture_output=True, text=True).stdout.strip())
        assert wait_until(busy, 60), child.stderr.read() if child.poll() is not None else "no testbed"
        time.sleep(1.0)
        child.send_signal(sig)
        child.wait(timeout=30)
    finally:
        child.kill()
    assert namespaces_of(child.pid) == [] and host_links() == links
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "netlab.linuxnet._gloo_push" not in ps


@needs_linux
@pytest.mark.parametrize("nic_rate, share", [("50Mbit/s", 0.5), ("link", 1.0)])
def test_a_senders_nic_runs_at_its_rate(nic_rate, share):
    """One sender into a deep 100 Mbit/s port: its NIC's rate (a tbf on its eth0) caps the goodput, half the
    link at 50 Mbit/s; at the port's rate (the default) the port is the bottleneck. Nothing is dropped."""
    # A busy CPU only ever lowers one kernel sender's goodput (a loaded CI machine once gave 0.78 of the link at
    # the port's rate), never raises it above what the NIC or the port allows: the best of up to three runs
    # converges on the rate from below, and a NIC that did not cap would be far above 0.5 in every run.
    best = None
    for _ in range(3):
        r = linux.incast(senders=1, block="256K", bandwidth="100Mbit/s", buffer="4M", rounds=6, nic_rate=nic_rate)
        assert r["drops"] == 0, r
        if best is None or r["link_fraction"] > best:
            best = r["link_fraction"]
        if best == pytest.approx(share, rel=0.15):
            break
    assert best == pytest.approx(share, rel=0.15), best
    with netns.Testbed(2, 12.5e6, 32768, nic_rate=6.25e6) as tb:
        for ns in tb.sender_ns:
            shown = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", "eth0"], capture_output=True,
                                   text=True).stdout
            assert "tbf" in shown and "50Mbit" in shown, shown


@needs_linux
@pytest.mark.slow
def test_ctrl_c_on_the_command_line_leaves_no_namespace():
    """`python -m netlab congestion incast --real`, Ctrl-C mid-run: one line, exit 130, the testbed deleted."""
    links = host_links()
    child = subprocess.Popen([sys.executable, "-m", "netlab", "congestion", "incast", "--real", "--senders", "8",
                              "--block", "64K", "--bandwidth", "100Mbit/s", "--buffer", "32K", "--rounds", "5000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    try:
        assert wait_until(lambda: len(namespaces_of(child.pid)) == 10, 60), "no testbed"
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130 and err.strip() == "netlab congestion: interrupted", (child.returncode, err)
    assert namespaces_of(child.pid) == [] and host_links() == links


@needs_linux
@pytest.mark.slow
def test_incast_collapses_and_recovers():
    """32 senders x 64 KiB into 100 Mbit/s with a 32 KB queue: RTOmin 200 ms wastes most rounds;
    1 ms or a deep buffer restore the link; the deep buffer drops nothing and meets the ideal round.
    The 32 KB runs are the 30-round ones the model is compared with below (``kernel_incast``: measured once)."""
    setup = dict(senders=32, block="64K", bandwidth="100Mbit/s")
    base = kernel_incast(buffer="32K", **setup, rounds=30)
    small_rto = kernel_incast(buffer="32K", rto_min="1ms", **setup, rounds=30)
    deep = linux.incast(buffer="4M", **setup, rounds=5)
    assert base["timeouts"] >= 1 and base["drops"] >= 1
    assert base["completion_s"]["max"] >= base["ideal_round_s"] + 0.2    # a round waited out an RTO
    assert small_rto["goodput_Bps"] >= 2 * base["goodput_Bps"]
    assert deep["goodput_Bps"] >= 2 * base["goodput_Bps"]
    assert deep["drops"] == 0 and deep["timeouts"] == 0
    assert deep["completion_s"]["p50"] == pytest.approx(deep["ideal_round_s"], rel=0.25)


@needs_linux
@pytest.mark.skipif(netns.ecn_marker() is None, reason="no ECN marker here: install iptables (apt install iptables)")
@pytest.mark.slow
def test_ecn_marking_keeps_a_shallow_buffer_from_dropping():
    """8 senders, 40 rounds with ECN and 150 without: ECN marks at 16 KB (a phantom queue) cut the drops per
    round by far more than half, and without ECN some rounds wait out an RTO. The run without ECN is the
    150-round one the model is compared with below (``kernel_incast``: measured once for both tests).

    Why these can fail only for a bug (below 1e-4 a run): marks are deterministic (none without ECN). The
    drops are sums over the rounds of per-round counts: 4 runs of 40 rounds gave 1,342-1,466 without ECN and
    50-105 with it (2 December 2026), so half the one's rate is more than 20 of the other's run-to-run standard
    deviations away (the run with ECN has 40 rounds, as those did). Without ECN a round waits out the RTO with
    a probability measured at 9-23 % per run (this machine: 15 of 160 rounds under load 10-30; docs/fabric.md:
    12-23 % over sixteen runs of 150):
    at 9 % or more, 150 rounds with none has probability 0.91^150 = 7e-7. A goodput ratio is not asserted:
    it follows that count, whose low tail failed the 1.3x bound this test had a few runs in a hundred
    (40 rounds: two or fewer such rounds, P = 4 % at 15.5 %)."""
    setup = dict(senders=8, block="64K", bandwidth="100Mbit/s", buffer="32K")
    base = kernel_incast(**setup, transport="cubic", rto_min="200ms", rounds=150)
    ecn = linux.incast(ecn=True, ecn_k="16K", **setup, rounds=40)
    assert base["rounds"] == 150 and ecn["rounds"] == 40
    assert base["marks"] == 0 and ecn["marks"] >= 1
    assert ecn["drops"] / 40 <= base["drops"] / 150 / 2, (ecn["drops"], base["drops"])
    assert 0.91 ** 150 < 1e-4                          # P(no RTO round in 150) at q = 9 %
    assert rto_rounds(base) >= 1, base["round_s"]


@needs_linux
@pytest.mark.slow
def test_gloo_push_collapses_its_fixes_restore_it_and_the_model_predicts_it():
    """16 gloo workers push 64 KiB shards to a server rank through the same port: at RTOmin 200 ms every round
    waits out an RTO (about a third of the link), rto_min 1 ms and a 4 MB queue restore the link on the same
    connections, and the kernel-aware model of the same incast is within 25 % of the collapsed push. (At N = 8
    a round either waits or not, and 8 rounds of it failed this 2 times in 5 on unshaped veth NICs.) At
    N = 16 every round waits out an RTO, so the counts and times asserted end alike on every run. A round
    that waits out the 200 ms RTO lasts at least that long (the timer is armed after the round starts; less
    one 4 ms tick), one that does not about the ideal 88 ms: the other flows drain while the timer runs, so
    such a round is not ideal + 200 ms (a median of 235 ms failed the earlier bound ideal + 150 ms). The
    600 s allowed is a guard against a hang, not a speed: at load 15-20 the 17 ranks took more than 120 s
    to start and finish on this 2-core machine (when each still imported torch itself; 10-17 s at load 7-11
    since they fork from one that has)."""
    r = linux.ps_push(workers=16, shard="64K", bandwidth="100Mbit/s", buffer="32K", rounds=10,
                      fixes=({"rto_min": "1ms"}, {"buffer": "4M"}), timeout_s=600)
    small_rto, deep = r["fixes"]
    assert r["timeouts"] >= 10 and r["completion_s"]["p50"] >= 0.200 - 0.004 > 2 * r["ideal_round_s"]
    assert small_rto["goodput_Bps"] >= 2 * r["goodput_Bps"] and deep["goodput_Bps"] >= 2 * r["goodput_Bps"]
    assert deep["drops"] == 0
    model = linux.model(senders=16, block="64K", bandwidth="100Mbit/s", buffer="32K", rto_min="200ms", rounds=10)
    assert model["link_fraction"] == pytest.approx(r["link_fraction"], rel=0.25), (r["link_fraction"], model)


# Within 25 % where the model is validated (docs/fabric.md, 2 Linux runs x 150 rounds against 3 seeds of the
# model, the senders' NICs at the port's rate): every row. At 30 rounds: N = 4 and 8 with rto_min 1 ms, N = 16 and
# 32 at both RTOmin, where every round ends alike. N = 4 and 8 at 200 ms, where a round either waits out an RTO or
# not (about 270 ms or 44 ms at N = 8), need 150 rounds: a 30-round mean swings by about 15 %.
AGREE = [(4, "1ms"), (8, "1ms"), (16, "200ms"), (16, "1ms"), (32, "200ms"), (32, "1ms")]


@needs_linux
@pytest.mark.slow
def test_model_agrees_with_linux_within_a_quarter():
    """Same setup (N x 64 KiB into 100 Mbit/s, 32 KB queue, cubic): the packet model with Linux's loss
    recovery and delayed ACKs (linux.model) predicts the kernel's goodput within 25 % (AGREE), and both
    collapse at RTOmin 200 ms (below two thirds of the link) and recover with 1 ms (above 80 % and at
    least 1.3 times the goodput) at N = 16 and 32, and recover at N = 8. Each is measured over 30 rounds:
    there a 30-round run of either side stays within a few per cent of its 150-round mean, because every
    round ends alike (all wait out the RTO, or none can). (N = 8 at 200 ms loses 12-23 % of its rounds to
    the RTO: 30 rounds with two or fewer such rounds, one run in eight, give more than two thirds of the
    link; those rounds are counted below, against a binomial band.)"""
    setup = dict(block="64K", bandwidth="100Mbit/s", buffer="32K", transport="cubic", rounds=30)
    fractions, typical = {}, {}
    for n in (4, 8, 16, 32):
        for rto in ("200ms", "1ms"):
            if n in (4, 8) and rto == "200ms":
                continue
            runs = kernel_incast(senders=n, rto_min=rto, **setup), linux.model(senders=n, rto_min=rto, **setup)
            fractions[n, rto] = tuple(r["link_fraction"] for r in runs)
            typical[n, rto] = tuple(r["ideal_round_s"] / r["completion_s"]["p50"] for r in runs)
    for key in AGREE:
        real, model = fractions[key]
        assert model == pytest.approx(real, rel=0.25), fractions
    for n in (16, 32):
        for k in (0, 1):                     # Linux, then the model
            slow, fast = fractions[n, "200ms"][k], fractions[n, "1ms"][k]
            assert slow < 2 / 3 and fast > 0.8 and fast >= 1.3 * slow, fractions
    # N = 8 recovers: its median round runs at more than 90 % of the link (99 % in docs/fabric.md's table).
    # The median, not the mean: under the suite's full load the 30-round mean fell to 83 % and 85 % in two
    # of about twenty runs, where a few slow rounds (about 200 ms lost in all) weigh on a 1.3 s mean. The
    # median fails only if 15 of the 30 rounds are slow (below 90 %): with one round in ten slow,
    # independently, P = 4e-8 (the exact binomial tail); it reaches 1e-4 at about one round in five.
    eight = kernel_incast(senders=8, rto_min="1ms", **setup)
    assert min(typical[8, "1ms"]) > 0.9, (typical, eight["round_s"], eight["timeouts"])


# Where a round either waits out the RTO or not (RTOmin 200 ms, N = 4 and 8), the share of rounds that wait is
# a binomial count; the per-round probability measured on the kernel (docs/fabric.md; this file's ECN test):
# N = 4: 0 of 300 rounds with the senders' NICs at the port's rate, 1 % unshaped; N = 8: 9-23 % per run.
# The bands below hold a run's count with probability above 1 - 1e-4 anywhere in these ranges (exact
# binomial tails, ``binomial_band``); the model's share (three seeds, deterministic) must lie in them too.
WAITS = {4: (0.0, 0.02), 8: (0.08, 0.25)}


@needs_linux
@pytest.mark.slow
@pytest.mark.parametrize("n", [4, 8])
def test_model_agrees_with_linux_where_a_round_either_waits_out_the_rto_or_not(n):
    """N = 4 and 8 at RTOmin 200 ms, 150 rounds: the share of rounds that wait out an RTO is held to the band
    of ``WAITS`` on the kernel and in the model, and at N = 8 the median round that waited is the model's
    within 25 % (a time the 200 ms RTO sets). Not compared: the link fraction and the rounds that do not
    wait. The link fraction is a function of the binomial count (at N = 8 a 150-round run at the measured
    probability leaves 25 % of the model, or two thirds of the link, about one run in a hundred); and the
    rounds that do not wait take what the machine's load adds to the testbed's send loop: at load 17-21
    their median was 25.1 ms at N = 4 and 48.3 ms at N = 8 (ideal 21.9 and 43.9 ms, the model 21.0 and
    41.9), with a tail that took N = 4 to 72 % of the link with a single round that waited."""
    setup = dict(senders=n, block="64K", bandwidth="100Mbit/s", buffer="32K", transport="cubic",
                 rto_min="200ms", rounds=150)
    real = kernel_incast(**setup)
    models = [linux.model(seed=k, **setup) for k in range(3)]
    lo, hi = binomial_band(150, *WAITS[n])
    waited = rto_rounds(real)
    assert lo <= waited <= hi, (waited, lo, hi)
    model_share = sum(rto_rounds(m) for m in models) / (3 * 150)
    assert lo / 150 <= model_share <= hi / 150, model_share
    if n == 8:                                # both have such rounds: lo >= 1, and the model's share is 0.18
        ours = statistics.median(t for m in models for t in m["round_s"] if t > 0.150)
        theirs = statistics.median(t for t in real["round_s"] if t > 0.150)
        assert ours == pytest.approx(theirs, rel=0.25), (ours, theirs)


def test_linux_profile_recovers_a_lost_tail_without_waiting_out_the_rto():
    """One flow of 20 packets whose last two are dropped once (no root needed). Reference: without a
    probe only the RTO finds them (RTOmin 200 ms). With linux=True, after the ACK of packet 17 two
    packets are out, so the tail loss probe fires 2 SRTT + 2 ms later and resends packet 19; its
    SACK lets RACK mark 18 lost and resend it: done a few RTTs after 2 SRTT + 2 ms, with no timeout."""
    from netlab.fabric import engine, switch, transport

    def run(linux_mode):
        fab = engine.Fabric(0)
        nic = fab.port("h.nic", 12.5e6, 5e-6)
        sw = fab.switch("tor")
        down = fab.port("tor->rx", 12.5e6, 5e-6, None, ecn=None, switch=sw)
        flow = engine.Flow(fab, "f", [nic, down], 20 * switch.MTU, start=0.0)
        original = down.enqueue
        dropped = set()

        def enqueue(pkt):                                # drop the first copy of the last two packets
            if pkt.seq >= 18 and pkt.seq not in dropped:
                dropped.add(pkt.seq)
                return
            original(pkt)
        down.enqueue = enqueue
        sender = transport.make("cubic", flow, 0.2, linux=linux_mode)
        fab.add_flow(flow, sender)
        fab.run(5.0)
        return flow.done_at, sender

    plain_done, plain = run(False)
    done, probing = run(True)
    assert plain.timeouts == 1 and plain_done > 0.2                 # the reference: RTOmin waited out
    assert probing.timeouts == 0 and probing.probes == 1 and probing.fast_retransmits == 1
    ideal = 20 * switch.MTU / 12.5e6                                # the flow's own serialization
    assert done < ideal + 2 * probing.srtt + 2e-3 + 5 * probing.srtt


def test_token_bucket_port_passes_its_burst_at_once_then_the_rate():
    """tbf's rule, by hand: after an idle period a full bucket of 3 packets leaves at once, then one packet
    per packet time at the rate; after another idle period the bucket has refilled."""
    from netlab.fabric import engine, switch

    fab = engine.Fabric(0)
    port = switch.TokenBucketPort(fab, "p", 12.5e6, 0.0, buffer=100_000, ecn=None, switch=fab.switch("s"), burst=3 * switch.MTU)
    left = []
    fab.arrive = lambda pkt: left.append(round(fab.now * 1e6, 6))        # us
    slot = switch.MTU / 12.5e6 * 1e6                                      # 120 us per packet at the rate

    lone = types.SimpleNamespace(path=[port])                            # a packet's flow: its path only

    def burst(k):
        for seq in range(k):
            port.enqueue(switch.Packet(lone, seq, switch.MTU, False, prio=0, sent_at=fab.now))
    fab.schedule(0.0, lambda _: burst(6))
    fab.schedule(0.01, lambda _: burst(4))                               # 10 ms later: the bucket is full again
    fab.run(1.0)
    assert left == pytest.approx([0, 0, 0, slot, 2 * slot, 3 * slot, 1e4, 1e4, 1e4, 1e4 + slot])
    with pytest.raises(ValueError, match="^burst:"):
        switch.TokenBucketPort(fab, "q", 12.5e6, 0.0, buffer=None, burst=100)


@pytest.mark.parametrize("idle, cwnd, ssthresh", [(0.1, 40, 20), (0.5, 10, 30), (0.75, 10, 30), (0.3, 20, 30)])
def test_persistent_connection_restarts_after_idle_as_the_kernel_does(idle, cwnd, ssthresh):
    """tcp_cwnd_restart by hand, for a sender that left cwnd 40 and ssthresh 20 with an RTO of 200 ms:
    idle under the RTO keeps the window; else ssthresh >= 3/4 cwnd, and cwnd halves per RTO of idle time
    beyond the first, down to no less than the initial window (10)."""
    from netlab.fabric import engine, transport

    fab = engine.Fabric(0)
    nic, down = fab.port("h.nic", 12.5e6, 5e-6), fab.port("rx", 12.5e6, 5e-6)
    prev = transport.make("cubic", engine.Flow(fab, "a", [nic, down], 1500, start=0.0), 0.2, linux=True)
    prev.cwnd, prev.ssthresh, prev.rto, prev.last_sent = 40.0, 20.0, 0.2, 0.0
    fab.now = idle
    nxt = transport.make("cubic", engine.Flow(fab, "b", [nic, down], 1500, start=idle), 0.2, linux=True)
    nxt.resume(prev)
    assert (nxt.cwnd, nxt.ssthresh) == (cwnd, ssthresh)


def test_delayed_ack_acks_every_second_segment_and_a_lone_one_on_its_timer():
    """Linux's receiver (delayed_ack): in order and with no hole, one ACK per two segments, the block's
    last segment at once; a lone segment is ACKed when the delayed-ACK timer fires; an out-of-order
    segment at once."""
    from netlab.fabric import engine, switch

    fab = engine.Fabric(0)
    acks = []
    flow = engine.Flow(fab, "f", [fab.port("rx", 12.5e6, 0.0)], 5 * switch.MTU, start=0.0)
    flow.delayed_ack = 0.04
    flow.sender = types.SimpleNamespace(rate_based=False,
                                        on_ack=lambda msg: acks.append((round(fab.now, 6), msg[0])))

    def deliver(seq):
        flow.receive(switch.Packet(flow, seq, switch.MTU, False, prio=0, sent_at=fab.now))
    for t, seq in ((0.0, 0), (0.001, 1), (0.002, 2), (0.1, 4), (0.2, 3)):
        fab.schedule(t, lambda _, s=seq: deliver(s))
    fab.run(1.0)
    # 0 held, 1 acks both; 2 held until its timer (40 ms); 4 is out of order: at once; 3 fills the hole
    # and completes the block: at once
    assert acks == [(0.001, 2), (0.042, 3), (0.1, 3), (0.2, 5)]
