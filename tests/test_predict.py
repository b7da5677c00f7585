"""The prediction widget, headless: locks, reveals only after answering, records with a timestamp."""
import datetime as dt
import json

import pytest

from netlab import train
from netlab.ui.predict import Prediction, load

OPTIONS = [("doubles", "each rank sends 2(p-1)/p of the gradient: at most 2x, never p x"),
           ("stays about the same", "right: the bytes per rank barely grow"),
           ("grows tenfold", "nothing in a ring grows with p that fast")]


def make(tmp_path, calls, value=1.17, **kw):
    def measure():
        calls.append(1)
        return {"value": value, "text": f"x{value}"}
    return Prediction("q1", "From 4 to 8 nodes?", measure, path=str(tmp_path / "p.json"), **kw)


def test_choice_locks_reveals_and_records(tmp_path):
    calls = []
    q = make(tmp_path, calls, options=OPTIONS, correct=lambda m: 1 if m["value"] < 1.5 else 0)
    assert "appears here once" in q.widget.children[-1].value and not calls      # nothing revealed yet
    q.button.click()                                                             # nothing chosen
    assert "first" in q.reveal.value and not calls and not q.button.disabled
    q.choice.value = 0
    q.button.click()
    assert calls == [1] and q.choice.disabled and q.button.disabled
    assert "Not this time" in q.reveal.value and "stays about the same" in q.reveal.value
    assert "never p x" in q.reveal.value and "right: the bytes" not in q.reveal.value   # only wrong options explained
    assert "nothing in a ring" in q.reveal.value and "x1.17" in q.reveal.value
    q.choice.value = 1                                      # locked: a change after the reveal does nothing
    q.lock()
    entry, = load(str(tmp_path / "p.json"))["answers"]
    assert entry["answer"] == 0 and entry["correct"] is False and entry["right"] == 1
    assert dt.datetime.fromisoformat(entry["time"]).tzinfo is not None and calls == [1]


def test_an_answered_question_reopens_locked(tmp_path):
    calls = []
    q = make(tmp_path, calls, options=OPTIONS, correct=lambda m: 1)
    q.choice.value = 1
    q.button.click()
    again = make(tmp_path, calls, options=OPTIONS, correct=lambda m: 1)
    assert again.button.disabled and again.choice.value == 1 and "Right." in again.reveal.value
    assert calls == [1]
    assert len(json.load(open(tmp_path / "p.json"))["answers"]) == 1


def test_numeric_answer_within_tolerance(tmp_path):
    calls = []
    q = make(tmp_path, calls, value=2.0, unit="ms", tolerance=0.1)
    q.choice.value = "fast"
    assert q.lock() is None and "first" in q.reveal.value
    q.choice.value = "2.15"
    assert q.lock()["correct"] is True
    q2 = Prediction("q2", "?", lambda: {"value": 2.0, "text": "2 ms"}, unit="ms", tolerance=0.1,
                    path=str(tmp_path / "p.json"))
    q2.choice.value = "2.5"
    assert q2.lock()["correct"] is False and len(load(str(tmp_path / "p.json"))["answers"]) == 2


def test_bad_questions_name_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="qid"):
        Prediction("", "?", lambda: {})
    with pytest.raises(ValueError, match="options"):
        Prediction("x", "?", lambda: {}, options=[("only one", "")], correct=lambda m: 0)


@pytest.mark.slow
def test_each_chapter_question_measures_and_judges(tmp_path):
    from netlab.ui import questions
    path = str(tmp_path / "p.json")
    made = [questions.ch1(path=path), questions.ch2(path=path), questions.ch3(path=path),
            questions.ch4(ranks=2, steps=20, path=path), questions.ch5(seeds=2, path=path)]
    for q in made:
        q.choice.value = 0
        entry = q.lock()
        assert entry["measured"]["text"] and 0 <= entry["right"] < len(q.options)
        assert entry["correct"] == (entry["right"] == 0)
    ch1, ch2, ch3, _, ch5 = (load(path)["answers"][i] for i in range(5))
    # the ring's closed form, 2(p-1) alpha + 2(p-1)/p n/B, from 4 to 8 nodes (width 512, 10 Gbit/s, 5 us)
    n, alpha, bw = train.grad_bytes(512), 5e-6, 10e9 / 8
    ring = (14 * alpha + 2 * 7 / 8 * n / bw) / (6 * alpha + 2 * 3 / 4 * n / bw)
    assert ch1["measured"]["value"] == pytest.approx(ring, rel=1e-3) and ch1["right"] == 2   # grows a little
    assert ch2["right"] == 1 and ch3["right"] == 2                              # naive/one server grow with p
    assert ch5["measured"]["value"] < 0.75                                      # collisions, not line rate
