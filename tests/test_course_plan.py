"""docs/course.md, the syllabus, names every chapter in labs/ and every graded exercise, so a chapter or an
exercise added later cannot be left out of the course plan unnoticed; its links to other docs exist."""
import json
import re
from pathlib import Path

from netlab import assignment

ROOT = Path(__file__).resolve().parents[1]
PLAN = (ROOT / "docs" / "course.md").read_text()
ROWS = [line for line in PLAN.splitlines() if re.match(r"\| \d+ \|", line)]


def _title(nb: Path) -> str:
    first = "".join(json.loads(nb.read_text())["cells"][0]["source"]).splitlines()[0]
    return first.split("·", 1)[1].strip()          # "# Chapter 1 · Why the network decides training speed"


def test_every_chapter_has_a_week():
    for nb in sorted((ROOT / "labs").glob("[0-9][0-9]_*.ipynb")):
        n = int(nb.name[:2])
        row = [r for r in ROWS if re.search(rf"\| {n} · ", r)]
        assert row, f"docs/course.md: no week for chapter {n} ({nb.name})"
        assert _title(nb).split(":")[0] in row[0], f"docs/course.md names chapter {n} differently from its notebook"


def test_every_exercise_is_graded_in_the_week_of_its_chapter():
    for ex in assignment.EXERCISES:
        n = int(ex.chapter[2:])
        row = next(r for r in ROWS if re.search(rf"\| {n} · ", r))
        assert f"exercise {n}" in row, f"docs/course.md: exercise {n} is not graded in chapter {n}'s week"


def test_weeks_are_consecutive_and_links_resolve():
    weeks = [int(r.split("|")[1]) for r in ROWS]
    assert weeks == list(range(1, len(weeks) + 1))
    for target in re.findall(r"\]\(([^)#]+\.md)\)", PLAN):
        assert (ROOT / "docs" / target).exists(), f"docs/course.md links to a missing page {target}"
