"""``python -m netlab assignment build OUT/`` (student version) and ``... nbgrader COURSE/`` (export)."""
from __future__ import annotations


def add_parser(p) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="write the student version of every chapter into OUT/")
    b.add_argument("out", metavar="OUT")
    n = sub.add_parser("nbgrader", help="write an nbgrader course (source/ with answers, instructors only)")
    n.add_argument("course", metavar="COURSE")
    n.add_argument("--seed", type=int, default=0, help="seed of the hidden variants in the autograder cells")
    n.add_argument("--name", default="netlab", help="assignment name (default: %(default)s)")


def main(args) -> int:
    if args.action == "build":
        from ..assignment.build import build
        files = build(args.out)
        print(f"wrote {len(files)} files to {args.out}: " + ", ".join(files))
        return 0
    from ..assignment.nbgrader import export
    path = export(args.course, args.name, args.seed)
    print(f"wrote {path}; then: cd {args.course} && nbgrader generate_assignment {args.name}")
    return 0
