"""``python -m netlab grade SUBMISSIONS/``: run every student's answers against netlab.check, sandboxed.

``--challenge NAME --leaderboard OUT/`` grades a folder of challenge entries instead (``netlab.challenge``):
each in its own sandbox, ranked by virtual time into OUT/leaderboard.csv, .json and .html."""
from __future__ import annotations

import json
import sys

from .. import validate


def add_parser(p) -> None:
    p.add_argument("submissions", metavar="SUBMISSIONS", help="a folder with one folder per student")
    p.add_argument("--seed", type=int, default=None,
                   help="instructor's seed: draw hidden variants of each check's cases (default: the chapter's own)")
    p.add_argument("--out", default="grades", help="folder for grades.csv and grades.json (default: %(default)s)")
    p.add_argument("--exercises", default=None, help="comma-separated chapters to grade, e.g. ch2,ch5 (default: all)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds per exercise (default: each exercise's own, 120-420 s)")
    p.add_argument("--json", action="store_true", help="print the grade table as JSON")
    p.add_argument("--challenge", default=None, metavar="NAME",
                   help="grade challenge entries for this task instead (python -m netlab challenge lists them)")
    p.add_argument("--leaderboard", default=None, metavar="OUT",
                   help="with --challenge: folder for leaderboard.csv, .json and .html (default: leaderboard)")


def main(args) -> int:
    if args.challenge is not None:
        return _challenge(args)
    if args.leaderboard is not None:
        raise ValueError("--leaderboard: goes with --challenge NAME (a challenge's board)")
    from ..assignment.grade import grade_all, write
    if args.time_limit is not None:
        validate.positive(args.time_limit, "--time-limit")        # seconds
    chapters = args.exercises.split(",") if args.exercises else None

    def progress(g):
        mark = "PASS" if g.passed else "FAIL"
        print(f"{g.student:>16} {g.exercise}  {mark}  {g.seconds:6.1f} s  {g.message[:90]}", file=sys.stderr)

    grades = grade_all(args.submissions, args.seed, chapters, args.time_limit, progress=progress)
    csv_path, json_path = write(grades, args.out, args.seed)
    if args.json:
        with open(json_path) as f:
            print(json.dumps(json.load(f), indent=2))
    else:
        print(f"wrote {csv_path} and {json_path}")
    return 0


def _challenge(args) -> int:
    from ..challenge import board, task
    t = task(args.challenge)
    if args.time_limit is not None:
        validate.positive(args.time_limit, "--time-limit")        # seconds

    def progress(r):
        score = f"{r.time_s * 1e6:12.3f} us" if r.time_s is not None else " " * 15
        print(f"{r.entry:>20}  {r.verdict:<20} {score}  {r.message[:80]}", file=sys.stderr)

    rows = board.grade(args.submissions, t, args.seed, args.time_limit, progress=progress)
    paths = board.write(t, rows, args.leaderboard or "leaderboard", args.seed)
    if args.json:
        with open(paths["json"]) as f:
            print(json.dumps(json.load(f), indent=2))
    else:
        print(f"wrote {paths['csv']}, {paths['json']} and {paths['html']}")
    return 0
