"""Are two versions of the packet fabric the same model? Runs chapter 6's fabric cells and the
chapter panel's settings, and writes what each observed (round times, drops, marks, pauses,
timeouts, retransmissions, per-flow completion, the senders' window/rate traces) as JSON.

    PYTHONPATH=<old tree> python benchmarks/fabric_identity.py /tmp/old.json
    PYTHONPATH=<new tree> python benchmarks/fabric_identity.py /tmp/new.json
    python benchmarks/fabric_identity.py --compare /tmp/old.json /tmp/new.json

Event counts and wall times are written too but not compared: making the engine cheaper changes
them on purpose. Everything else must be equal, float for float.
"""
import hashlib
import json
import sys

KB = 1024
GBIT = 1e9 / 8


def digest(values) -> str:
    return hashlib.sha256(repr([float(v) for v in values]).encode()).hexdigest()[:16]


def observed(run) -> dict:
    fab = run.engine
    ports = {name: {"drops": p.drops, "marks": p.marks, "pauses": p.pauses, "pause_s": p.paused_seconds(),
                    "tx_bytes": p.tx_bytes, "queue": digest(p.q_bytes), "queue_t": digest(p.q_t),
                    "drop_t": digest(p.drop_t), "mark_t": digest(p.mark_t)}
             for name, p in fab.ports.items()}
    flows = [{"flow": f.name, "done_at": f.done_at, "drops": f.drops,
              "timeouts": f.sender.timeouts, "retransmissions": f.sender.retransmissions,
              "rx": digest(f.rx_t), "w_t": digest(f.sender.w_t), "w": digest(f.sender.w),
              "alpha": getattr(f.sender, "alpha", None)} for f in run.flows if f.sender is not None]
    return {"rounds": [float(r) for r in run.step_times], "ports": ports, "flows": flows,
            "summary": {k: v for k, v in run.summary().items() if k not in ("events", "wall_s")},
            "events (not compared)": fab.events}


def cells() -> dict:
    from netlab.fabric import ECN, PFC, Congestion, Incast, incast, jitter, long_flows, victim
    from netlab.fabric.experiments import headroom
    from netlab.ui.ch6 import run_setting
    out = {}
    for n in (1, 2, 4, 8, 16, 32):
        for rto in (0.2, 200e-6):
            out[f"incast N={n} rto={rto}"] = observed(incast(Incast(senders=n, block=256 * KB, rounds=2, bandwidth=GBIT,
                                                                    switch=Congestion("reno", buffer=32 * KB, rto_min=rto))))
    out["lossless"] = observed(incast(Incast(senders=16, block=256 * KB, bandwidth=GBIT,
                                             switch=Congestion("ideal", buffer=64 * KB, pfc=PFC(64 * KB - headroom(GBIT))))))
    k = 65 * 1500
    out["dctcp sawtooth"] = observed(long_flows(2, 10 * GBIT,
                                                switch=Congestion("dctcp", buffer=600_000, ecn=ECN.dctcp(k)), duration=0.03))
    out["reno long"] = observed(long_flows(2, 10 * GBIT, switch=Congestion("reno", buffer=600_000), duration=0.03))
    for kp in (5, 20, 65):
        out[f"dctcp K={kp}"] = observed(long_flows(2, 10 * GBIT,
                                                   switch=Congestion("dctcp", ecn=ECN.dctcp(kp * 1500)), duration=0.03))
    out["victim on"], out["victim off"] = observed(victim(pfc=True)), observed(victim(pfc=False))
    for name, r in jitter(("reno", "dctcp", "dcqcn"), config=Incast(senders=4, block=64 * KB, rounds=40,
                                                                    switch=Congestion('reno', buffer=64 * 1024, background=0.3)), keep_runs=True).items():
        out[f"jitter {name}"] = observed(r["run"])
    for rto in (0.2, 200e-6):
        out[f"model incast 8 rto={rto}"] = observed(incast(Incast(senders=8, block=256 * KB, rounds=1, bandwidth=GBIT,
                                                                  switch=Congestion("reno", buffer=32 * KB, rto_min=rto))))
    base = dict(senders=16, block="256K", bandwidth="1Gbit/s", buffer="64K", transport="reno", ecn_k="default",
                pfc=False, rto_min="200ms")
    for transport in ("reno", "cubic", "dctcp", "dcqcn", "ideal"):
        for pfc in (False, True):
            for rto in ("200ms", "200us"):
                setting = {**base, "transport": transport, "pfc": pfc, "rto_min": rto}
                out[f"panel {transport} pfc={pfc} rto={rto}"] = observed(run_setting(setting))
    for name, value in (("senders", 32), ("block", "1M"), ("buffer", "16K"), ("bandwidth", "10Gbit/s")):
        for transport in ("reno", "dcqcn"):
            out[f"panel {transport} {name}={value}"] = observed(run_setting({**base, "transport": transport,
                                                                                  name: value}))
    return out


def compare(old_path, new_path) -> int:
    old, new = (json.load(open(p)) for p in (old_path, new_path))
    bad = 0

    def walk(a, b, where):
        nonlocal bad
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if "not compared" not in key:
                    walk(a.get(key), b.get(key), f"{where}/{key}")
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{i}]")
        elif a != b and not (isinstance(a, float) and isinstance(b, float) and a != a and b != b):   # nan == nan
            bad += 1
            if bad <= 20:
                print(f"DIFFERENT {where}: {a!r} != {b!r}")
    walk(old, new, "")
    events = [sum(v["events (not compared)"] for v in runs.values()) for runs in (old, new)]
    print(f"{len(old)} runs compared: {'identical' if not bad else f'{bad} differences'}; "
          f"events {events[0]} -> {events[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    json.dump(cells(), open(sys.argv[1], "w"), indent=1, sort_keys=True)
