"""How far int8 trails fp32 in chapter 4's training, seed by seed: the spread behind the chapter's int8 check.

    python benchmarks/int8_seed_spread.py [--steps 30,300] [--seeds 10] [--ranks 4]

For each step count and seed, chapter 4's MLP (plain SGD, lr 0.1, 32 samples per rank) trains on real
gloo ranks twice, with the fp32 all-reduce and with int8 (one shared scale, floor(127/p) levels), from the
same seed (same initial weights and batch order). Prints each gap (int8 - fp32 final test accuracy) and,
per step count, the least, the largest, the mean and the standard deviation over the seeds, and the
bound mean - 3 sd. Accuracies are virtual-time independent: the same on any machine.
"""
import argparse
import statistics

from netlab.compress.training import run_training


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="30,300", help="comma-separated step counts")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 0 .. N-1")
    ap.add_argument("--ranks", type=int, default=4)
    args = ap.parse_args()
    for steps in (int(s) for s in args.steps.split(",")):
        gaps = []
        for seed in range(args.seeds):
            base = run_training("none", ranks=args.ranks, steps=steps, seed=seed).final_accuracy
            int8 = run_training("int8", ranks=args.ranks, steps=steps, seed=seed).final_accuracy
            gaps.append(int8 - base)
            print(f"steps {steps:4d}  seed {seed:3d}  fp32 {base:.3f}  int8 {int8:.3f}  gap {int8 - base:+.3f}", flush=True)
        mean, sd = statistics.mean(gaps), statistics.stdev(gaps) if len(gaps) > 1 else 0.0
        print(f"steps {steps:4d}, {len(gaps)} seeds: gap from {min(gaps):+.3f} to {max(gaps):+.3f}, mean {mean:+.3f}, "
              f"sd {sd:.3f}, mean - 3 sd {mean - 3 * sd:+.3f}; int8 below fp32 in {sum(g < 0 for g in gaps)} of "
              f"{len(gaps)}", flush=True)


if __name__ == "__main__":
    main()
