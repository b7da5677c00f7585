"""``python -m netlab grade SUBMISSIONS/``: run every student's answers against netlab.check, sandboxed."""
from __future__ import annotations

import json
import sys


def add_parser(p) -> None:
    p.add_argument("submissions", metavar="SUBMISSIONS", help="a folder with one folder per student")
    p.add_argument("--seed", type=int, default=None,
                   help="instructor's seed: draw hidden variants of each check's cases (default: the chapter's own)")
    p.add_argument("--out", default="grades", help="folder for grades.csv and grades.json (default: %(default)s)")
    p.add_argument("--exercises", default=None, help="comma-separated chapters to grade, e.g. ch2,ch5 (default: all)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds per exercise (default: each exercise's own, 120-420 s)")
    p.add_argument("--json", action="store_true", help="print the grade table as JSON")


def main(args) -> int:
    from ..assignment.grade import grade_all, write
    if args.time_limit is not None and not args.time_limit > 0:
        raise ValueError(f"--time-limit: seconds > 0, got {args.time_limit}")
    chapters = args.exercises.split(",") if args.exercises else None

    def progress(g):
        mark = "PASS" if g.passed else "FAIL"
        print(f"{g.student:>16} {g.exercise}  {mark}  {g.seconds:6.1f} s  {g.message[:90]}", file=sys.stderr)

    grades = grade_all(args.submissions, args.seed, chapters, args.time_limit, progress)
    csv_path, json_path = write(grades, args.out, args.seed)
    if args.json:
        with open(json_path) as f:
            print(json.dumps(json.load(f), indent=2))
    else:
        print(f"wrote {csv_path} and {json_path}")
    return 0
