"""Grade a folder of submissions: every student's answer to every exercise, each in its own sandbox.

    SUBMISSIONS/alice/02_collectives.ipynb      (or exercises/ch2_ring.py, or both)
    SUBMISSIONS/bob/...

The grade table has one row per (student, exercise): passed, points, seconds, the check's message,
where the answer came from and how much it printed. It is written as ``grades.csv`` and
``grades.json`` in the output folder. Students are graded one after another (each check already
runs several ranks); an answer that hangs, raises, prints without end or kills its process costs
only its own row (``sandbox.py``).
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass

from .. import validate
from . import BY_CHAPTER, EXERCISES
from .sandbox import run_answer
from .source import find_answer

FIELDS = ["student", "exercise", "passed", "points", "max_points", "seconds", "message", "answer",
          "output_bytes"]


@dataclass
class Grade:
    student: str
    exercise: str
    passed: bool
    points: int
    max_points: int
    seconds: float
    message: str
    answer: str                 # the file the answer came from ('' if none was found)
    output_bytes: int
    rows: list


def students(submissions: str) -> list[str]:
    if not os.path.isdir(submissions):
        raise ValueError(f"SUBMISSIONS: not a folder: {submissions!r}")
    names = sorted(n for n in os.listdir(submissions)
                   if os.path.isdir(os.path.join(submissions, n)) and not n.startswith("."))
    if not names:
        raise ValueError(f"SUBMISSIONS: no student folders in {submissions!r}")
    return names


def grade_one(folder: str, student: str, chapter: str, seed: int | None, *, time_limit_s: float | None = None) -> Grade:
    exercise = BY_CHAPTER[chapter]
    source, origin = find_answer(folder, exercise)
    if source is None:
        return Grade(student=student, exercise=chapter, passed=False, points=0, max_points=exercise.points, seconds=0.0,
                     message=f"no answer found (expected {exercise.notebook} or {exercise.module})", answer="",
                     output_bytes=0, rows=[])
    outcome = run_answer(chapter, source, origin, seed, time_limit_s=time_limit_s or exercise.time_limit_s)
    return Grade(student=student, exercise=chapter, passed=outcome.passed,
                 points=exercise.points if outcome.passed else 0, max_points=exercise.points,
                 seconds=round(outcome.seconds, 1), message=outcome.message, answer=origin,
                 output_bytes=outcome.output_bytes, rows=outcome.rows)


def grade_all(submissions: str, seed: int | None = None, chapters=None, time_limit_s: float | None = None,
              *, progress=None) -> list[Grade]:
    chapters = list(chapters or [e.chapter for e in EXERCISES])
    for c in chapters:
        validate.choice(c, "--exercises", BY_CHAPTER)
    grades = []
    for student in students(submissions):
        for chapter in chapters:
            g = grade_one(os.path.join(submissions, student), student, chapter, seed, time_limit_s=time_limit_s)
            grades.append(g)
            if progress:
                progress(g)
    return grades


def write(grades: list[Grade], out: str, seed: int | None) -> tuple[str, str]:
    os.makedirs(out, exist_ok=True)
    csv_path, json_path = os.path.join(out, "grades.csv"), os.path.join(out, "grades.json")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for g in grades:
            w.writerow(asdict(g))
    totals: dict = {}
    for g in grades:
        t = totals.setdefault(g.student, {"points": 0, "max_points": 0})
        t["points"] += g.points
        t["max_points"] += g.max_points
    with open(json_path, "w") as f:
        json.dump({"seed": seed, "totals": totals, "grades": [asdict(g) for g in grades]}, f, indent=2)
    return csv_path, json_path
