"""Incast on the real Linux stack (network namespaces, a bridge, a tbf port): the collapse and its fixes.

    sudo .venv/bin/python benchmarks/linux_incast.py [--senders 8,32] [--rounds 20] [--gloo-workers 8]
    sudo .venv/bin/python benchmarks/linux_incast.py --compare 4,8,16,32 [--repeats 3] [--compare-rounds 30]

0. (--compare) The model against the kernel, same setup: for each N and RTOmin 200 ms / 1 ms,
   `repeats` Linux runs of `compare-rounds` rounds (mean, and the spread min-max of the runs'
   link fractions) beside the packet model's prediction (netlab.fabric.linux.model: Linux's loss
   recovery, persistent connections, this kernel's HZ), and model / Linux mean - 1.

1. Raw TCP incast (netlab.fabric.linux.incast): N senders x `block` per round into a 100 Mbit/s
   port with a 32 KB drop-tail queue, the kernel's cubic, for each N: the base (RTOmin 200 ms),
   rto_min 1 ms, a 4 MB queue, ECN marking at 16 KB, and reno and bbr in the base setup.
2. The same with real gloo ranks (netlab.fabric.linux.ps_push): workers push `block` shards to a
   server rank; the base, then rto_min 1 ms and a 4 MB queue on the same connections, and ECN in
   a separate launch (ECN is negotiated when gloo connects).
Every number is measured on the wall clock when the script runs: link = goodput x 1514/1448 / rate
(the share of the link's frames that carried the block), ideal = N x block x 1514/1448 / rate.
Units: KiB = 1024 B, Mbit/s = 1e6 bit/s. Needs root; elsewhere it prints why and exits 0.
"""
import argparse
import time

from netlab.fabric import linux, netns

COLUMNS = f"{'setup':<28}{'link':>7}{'p50 ms':>9}{'p99 ms':>9}{'ideal ms':>10}{'RTOs':>6}{'retx':>7}{'drops':>7}{'marks':>7}"


def row(label: str, r: dict) -> str:
    c = r["completion_s"]
    return (f"{label:<28}{r['link_fraction']:>7.0%}{c['p50'] * 1e3:>9.1f}{c['p99'] * 1e3:>9.1f}"
            f"{r['ideal_round_s'] * 1e3:>10.1f}{r['timeouts']:>6}{r['retransmissions']:>7}{r['drops']:>7}{r['marks']:>7}")


def compare(ns, repeats: int, rounds: int, base: dict) -> None:
    import os
    print(f"model vs Linux: {base['block']} per sender per round, {base['bandwidth']} port, {base['buffer']} queue, "
          f"cubic, {repeats} Linux runs x {rounds} rounds each (kernel HZ {linux.kernel_hz()}, "
          f"load {os.getloadavg()[0]:.2f} at the start)")
    print(f"{'N':>3} {'RTOmin':>7} {'Linux mean':>11} {'Linux min-max':>14} {'model':>7} {'model/Linux-1':>14}"
          f"{'RTOs L/m per round':>20}")
    for n in ns:
        for rto in ("200ms", "1ms"):
            runs = [linux.incast(senders=n, rto_min=rto, rounds=rounds, **base) for _ in range(repeats)]
            m = linux.model(senders=n, rto_min=rto, rounds=rounds, **base)
            fr = [r["link_fraction"] for r in runs]
            mean = sum(fr) / len(fr)
            rtos = sum(r["timeouts"] for r in runs) / (repeats * rounds)
            print(f"{n:>3} {rto:>7} {mean:>11.1%} {min(fr):>6.1%}-{max(fr):<7.1%} {m['link_fraction']:>7.1%}"
                  f"{m['link_fraction'] / mean - 1:>+14.0%}{rtos:>11.1f} / {m['timeouts'] / rounds:<6.1f}", flush=True)
    print(f"(load {os.getloadavg()[0]:.2f} at the end)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--senders", default="8,32")
    ap.add_argument("--block", default="64K")
    ap.add_argument("--bandwidth", default="100Mbit/s")
    ap.add_argument("--buffer", default="32K")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--gloo-workers", type=int, default=8, help="0 skips the gloo part")
    ap.add_argument("--compare", default="", help="N values for the model-vs-Linux table only, e.g. 4,8,16,32")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compare-rounds", type=int, default=30)
    args = ap.parse_args()
    ok, why = linux.available()
    if not ok:
        print(why)
        return
    if args.compare:
        compare([int(x) for x in args.compare.split(",")], args.repeats, args.compare_rounds,
                dict(block=args.block, bandwidth=args.bandwidth, buffer=args.buffer))
        return
    base = dict(block=args.block, bandwidth=args.bandwidth, buffer=args.buffer, rounds=args.rounds)
    print(f"raw TCP incast: {args.block} per sender per round, {args.bandwidth} port, {args.buffer} queue, "
          f"{args.rounds} rounds (kernel: {' '.join(linux.transports())})")
    for n in [int(x) for x in args.senders.split(",")]:
        start = time.perf_counter()
        print(f"\n{n} senders\n{COLUMNS}")
        variants = [("cubic, RTOmin 200 ms", {}), ("cubic, rto_min 1 ms", {"rto_min": "1ms"}),
                    ("cubic, 4 MB queue", {"buffer": "4M"}), ("cubic, ECN at 16 KB", {"ecn": True, "ecn_k": "16K"}),
                    ("reno, RTOmin 200 ms", {"transport": "reno"}), ("bbr, RTOmin 200 ms", {"transport": "bbr"})]
        for label, change in variants:
            if change.get("ecn") and netns.ecn_marker() is None:
                print(f"{label:<28}skipped: no ECN marker here (install iptables)")
                continue
            print(row(label, linux.incast(senders=n, **{**base, **change})), flush=True)
        print(f"[{time.perf_counter() - start:.0f} s]")
    if args.gloo_workers:
        start = time.perf_counter()
        n = args.gloo_workers
        print(f"\ngloo parameter-server push: {n} workers x {args.block} shards to one server rank, "
              f"{args.rounds} rounds per setup\n{COLUMNS}")
        r = linux.ps_push(workers=n, shard=args.block, bandwidth=args.bandwidth, buffer=args.buffer,
                          rounds=args.rounds, fixes=({"rto_min": "1ms"}, {"buffer": "4M"}))
        for label, res in zip(["gloo, RTOmin 200 ms", "gloo, rto_min 1 ms", "gloo, 4 MB queue"], [r] + r["fixes"]):
            print(row(label, res))
        if netns.ecn_marker() is not None:
            e = linux.ps_push(workers=n, shard=args.block, bandwidth=args.bandwidth, buffer=args.buffer,
                              rounds=args.rounds, ecn=True, ecn_k="16K")
            print(row("gloo, ECN at 16 KB", e))
        print(f"[{time.perf_counter() - start:.0f} s]")


if __name__ == "__main__":
    main()
