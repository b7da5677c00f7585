"""Assignments: the student version has no answer in it; grading survives any answer; variants are seeded."""
import json
import os
import shutil

import pytest

from netlab.assignment import BY_CHAPTER, EXERCISES, build, source, variants
from netlab.assignment.grade import grade_all, write

HERE = os.path.dirname(__file__)
SOLUTIONS = os.path.join(HERE, "solutions")


def test_build_writes_stubs_and_no_reference_answer(tmp_path):
    out = tmp_path / "student"
    files = build.build(str(out))
    for e in EXERCISES:
        assert e.notebook in files and f"exercises/{e.module}" in files
        nb = json.load(open(out / e.notebook))
        assert all(not c.get("outputs") for c in nb["cells"])
        assert source.is_stub(source.notebook_answer(str(out / e.notebook), e.function), e.function)
    assert build.leaks(str(out)) == []
    assert {"ch6", "ch7", "ch8"} <= {e.chapter for e in EXERCISES}      # every chapter's exercise is graded
    # the leak detector is not vacuous: every reference answer, copied in, is found
    shutil.copyfile(os.path.join(SOLUTIONS, "ch2_ring.py"), out / "exercises" / "ch2_ring.py")
    shutil.copyfile(os.path.join(SOLUTIONS, "ch3_ssp_wait.py"), out / "notes.txt")
    found = build.leaks(str(out))
    assert any("ch2_ring.py" in hit for hit in found) and any("notes.txt" in hit for hit in found)
    assert all(build.solution_lines()[e.module] for e in EXERCISES)          # every answer has lines to look for


def test_build_refuses_a_notebook_with_an_answer(tmp_path):
    labs = tmp_path / "labs"
    shutil.copytree(build.LABS, labs)
    nb = json.load(open(labs / "05_topology.ipynb"))
    ref = open(os.path.join(SOLUTIONS, "ch5_max_min.py")).read()
    cell = next(c for c in nb["cells"] if "def max_min_rates" in "".join(c["source"]))
    cell["source"] = ref
    json.dump(nb, open(labs / "05_topology.ipynb", "w"))
    with pytest.raises(ValueError, match="05_topology.ipynb.*not a stub"):
        build.build(str(tmp_path / "out"), labs=str(labs))
    with pytest.raises(ValueError, match="not empty"):
        build.build(str(tmp_path))


def test_answers_are_found_in_notebooks_and_files(tmp_path):
    e = BY_CHAPTER["ch5"]
    shutil.copyfile(os.path.join(build.LABS, e.notebook), tmp_path / e.notebook)       # the stub
    code, origin = source.find_answer(str(tmp_path), e)
    assert origin == e.notebook and source.is_stub(code, e.function) and "netlab.check" not in code
    (tmp_path / "exercises").mkdir()
    shutil.copyfile(os.path.join(SOLUTIONS, e.module), tmp_path / "exercises" / e.module)
    code, origin = source.find_answer(str(tmp_path), e)
    assert origin == os.path.join("exercises", e.module) and not source.is_stub(code, e.function)
    assert source.find_answer(str(tmp_path / "exercises"), BY_CHAPTER["ch2"]) == (None, None)


def test_variants_are_seeded_and_the_reference_passes_them():
    import sys
    sys.path.insert(0, HERE)
    from solutions import ch5_max_min
    for chapter in BY_CHAPTER:
        assert variants.draw(chapter, None) == ({}, {})
    assert variants.draw("ch2", 1) == variants.draw("ch2", 1) != variants.draw("ch2", 2)
    assert variants.draw("ch1", 7)[0]["cases"] != variants.draw("ch1", 8)[0]["cases"]
    ch3_cases = variants.draw("ch3", 3)[1]["netlab.check.ch3._cases"]()
    from netlab.check import ch3
    assert len(ch3_cases) > len(ch3._cases()) and all(ch3.reachable(*c[:3]) for c in ch3_cases)
    assert ch3_cases == variants.draw("ch3", 3)[1]["netlab.check.ch3._cases"]() != \
        variants.draw("ch3", 4)[1]["netlab.check.ch3._cases"]()
    from netlab.check import ch5
    original = ch5._cases
    try:
        result = variants.run_check("ch5", ch5_max_min.max_min_rates, seed=11)
        names = [row["case"] for row in result.rows]
        assert result.passed and "random flows over random links" in names
    finally:
        ch5._cases = original
    with pytest.raises(ValueError, match="chapter"):
        variants.draw("ch99", 1)


def _reference(module):
    import importlib
    import sys
    sys.path.insert(0, HERE)
    return importlib.import_module(f"solutions.{module}")


def test_ch6_stub_fails_the_reference_passes_and_the_variant_follows_the_seed():
    from netlab.check import ch6
    from netlab.exercises.ch6_dctcp import dctcp_update as stub
    ref = _reference("ch6_dctcp").dctcp_update
    drawn = {seed: [args for _, args in variants.draw("ch6", seed)[1]["netlab.check.ch6._cases"]()]
             for seed in (1, 2)}
    assert drawn[1] == [args for _, args in variants.draw("ch6", 1)[1]["netlab.check.ch6._cases"]()]
    assert drawn[1] != drawn[2] and not set(drawn[1][2:]) & {args for _, args in ch6._cases()}
    original = ch6._cases, ch6._fabric_windows
    try:
        result = variants.run_check("ch6", ref, seed=1)
        assert result.passed, str(result)
        assert [r["case"] for r in result.rows][2:7] == [f"drawn window {i}" for i in range(1, 6)]
        windows = {row["case"] for row in result.rows if "fabric run" in row["case"]}
        ch6._cases, ch6._fabric_windows = original
        assert not variants.run_check("ch6", stub, seed=1).passed
        ch6._cases, ch6._fabric_windows = original
        # a typical wrong answer, no floor of 2 packets, fails the variant too: its boundary cases stay
        no_floor = lambda a, c, n, m, g=1 / 16: ((1 - g) * a + g * m / n, c * (1 - a / 2) if m else c)
        assert not variants.run_check("ch6", no_floor, seed=1).passed
    finally:
        ch6._cases, ch6._fabric_windows = original
    assert windows and ch6._cases is original[0]


def test_ch7_cases_follow_the_seed():
    from netlab.check import ch7
    drawn = {seed: variants.draw("ch7", seed)[0]["cases"] for seed in (1, 2, 3)}
    assert drawn[1] == variants.draw("ch7", 1)[0]["cases"]
    assert len({tuple(c) for c in drawn.values()}) == 3 and all(len(c) == 3 for c in drawn.values())
    assert not any(set(c) & set(ch7.CASES) == set(c) for c in drawn.values())


@pytest.mark.slow                             # steps measured on real ranks
def test_ch7_stub_fails_and_the_reference_passes_a_hidden_variant():
    from netlab.exercises.ch7_overlap import predict_overlapped_step as stub
    ref = _reference("ch7_overlap").predict_overlapped_step
    result = variants.run_check("ch7", ref, seed=4)
    assert result.passed, str(result)
    measured = {(int(r["ranks"]), r["bandwidth"], r["latency"]) for r in result.rows if r["source"] == "real ranks"}
    assert measured == {c[:3] for c in variants.draw("ch7", 4)[0]["cases"]}
    assert not variants.run_check("ch7", stub, seed=4).passed

    def no_wait(bucket_bytes, ready_s, compute_s, optimizer_s, ranks, bandwidth, latency):
        """A typical wrong answer: each bucket starts when it is ready, as if the network had a lane for each."""
        ring = lambda n: 2 * (ranks - 1) * latency + 2 * (ranks - 1) / ranks * n / bandwidth
        return max([compute_s] + [r + ring(n) for n, r in zip(bucket_bytes, ready_s)]) + optimizer_s
    assert not variants.run_check("ch7", no_wait, seed=4).passed


def test_ch8_design_stub_fails_the_reference_passes_and_the_starting_design_does_not():
    from netlab.exercises.ch8_capstone import capstone_design as stub
    ref = _reference("ch8_capstone").capstone_design
    assert variants.draw("ch8", 5) == ({}, {})                        # one cluster: no hidden variant
    assert variants.run_check("ch8", ref, seed=5).passed
    result = variants.run_check("ch8", stub, seed=5)
    assert not result.passed and "not implemented" in result.message
    start = lambda: {"algo": "ring", "compression": "none", "bucket": "1MB", "placement": "scattered",  # noqa: E731
                     "overlap": True}                                  # the notebook's starting design
    assert not variants.run_check("ch8", start).passed
    assert "keys" in variants.run_check("ch8", lambda: {"algo": "ring"}).message


@pytest.mark.slow
def test_grading_takes_a_design_from_the_notebook_or_the_file(tmp_path):
    subs = tmp_path / "subs"
    (subs / "alice" / "exercises").mkdir(parents=True)
    shutil.copyfile(os.path.join(SOLUTIONS, "ch8_capstone.py"), subs / "alice" / "exercises" / "ch8_capstone.py")
    (subs / "bob").mkdir()
    nb = BY_CHAPTER["ch8"].notebook
    shutil.copyfile(os.path.join(build.LABS, nb), subs / "bob" / nb)                  # the stub, unchanged
    grades = {g.student: g for g in grade_all(str(subs), seed=2, chapters=["ch8"], time_limit_s=60)}
    assert grades["alice"].passed and grades["alice"].points == 10
    assert not grades["bob"].passed and "not implemented" in grades["bob"].message
    assert grades["bob"].answer == nb


BAD = {
    # blocked for good (a deadlock): the sandbox's wall-clock limit ends it as it ends a busy loop, without the
    # loop's CPU seconds (the CPU-time limit, twice the wall's plus 10 s, could not act first either way)
    "hangs": "import threading\ndef max_min_rates(flows, capacity):\n    threading.Event().wait()\n",
    "raises": "def max_min_rates(flows, capacity):\n    return 1 / 0\n",
    "prints": ("import sys\ndef max_min_rates(flows, capacity):\n"
               "    for _ in range(20000):\n        sys.stdout.write('x' * 1000 + '\\n')\n    return [0.0] * len(flows)\n"),
    "kills": "import os, signal\ndef max_min_rates(flows, capacity):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    "exits": "import os\ndef max_min_rates(flows, capacity):\n    os._exit(3)\n",
}


# The wall-clock limit each answer gets from the end of its imports, which the hanging one waits out: the
# others must finish inside it. The slowest, "prints" (160 MB through the sandbox's pipe), took 1.6 s from
# its process's start at load 10 on 2 cores, "good" 0.7 s; 8 s is five times that. (It was 15 s, 15 of the
# test's 20 s of wall time.)
TIME_LIMIT_S = 8


@pytest.mark.slow
def test_grading_survives_hanging_raising_printing_and_dying_answers(tmp_path):
    subs = tmp_path / "submissions"
    for name, code in BAD.items():
        (subs / name / "exercises").mkdir(parents=True)
        (subs / name / "exercises" / "ch5_max_min.py").write_text(code)
    (subs / "good").mkdir()
    shutil.copyfile(os.path.join(SOLUTIONS, "ch5_max_min.py"), subs / "good" / "ch5_max_min.py")
    (subs / "empty").mkdir()
    grades = {g.student: g for g in grade_all(str(subs), seed=5, chapters=["ch5"], time_limit_s=TIME_LIMIT_S)}
    assert grades["good"].passed and grades["good"].points == 10
    assert not any(grades[n].passed for n in BAD) and grades["empty"].message.startswith("no answer found")
    assert "time limit" in grades["hangs"].message
    assert "ZeroDivisionError" in grades["raises"].message
    assert grades["prints"].output_bytes > 10_000_000 and "max-min fair rate is" in grades["prints"].message
    assert "SIGKILL" in grades["kills"].message
    assert "status 3" in grades["exits"].message
    csv_path, json_path = write(list(grades.values()), str(tmp_path / "grades"), seed=5)
    table = json.load(open(json_path))
    assert table["totals"]["good"] == {"points": 10, "max_points": 10}
    assert open(csv_path).readline().startswith("student,exercise,passed")


@pytest.mark.slow
def test_grading_runs_ring_answers_on_real_ranks(tmp_path, capsys):
    from netlab.cli import main
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    shutil.copyfile(os.path.join(SOLUTIONS, "ch2_ring.py"), subs / "alice" / "ch2_ring.py")
    (subs / "bob").mkdir()
    shutil.copyfile(os.path.join(build.LABS, "02_collectives.ipynb"), subs / "bob" / "02_collectives.ipynb")
    assert main(["grade", str(subs), "--seed", "3", "--exercises", "ch2", "--out", str(tmp_path / "g"), "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    by = {g["student"]: g for g in table["grades"]}
    from netlab.check.ch2 import CASES
    drawn = {(int(r["ranks"]), int(r["elements"])) for r in by["alice"]["rows"]}
    assert by["alice"]["passed"] and len(drawn) == 4 and not drawn & set(CASES)     # a hidden variant
    assert not by["bob"]["passed"] and "not implemented" in by["bob"]["message"]
