"""Chapter 9's prediction questions: each measures, and the option the measurement makes right is the one
the chapter's text and claims stand by (the explanations are written for it)."""
import pytest

from netlab.ui import questions
from netlab.ui.predict import load


@pytest.mark.slow
def test_each_chapter_9_question_measures_and_judges(tmp_path):
    path = str(tmp_path / "p.json")
    made = [questions.ch9(path=path), questions.ch9_reorder(path=path), questions.ch9_trim(path=path),
            questions.ch9_failover(path=path), questions.ch9_planes(path=path)]
    for q in made:
        q.choice.value = 0
        entry = q.lock()
        assert entry["measured"]["text"]
    spray, reorder, trim, failover, planes = (load(path)["answers"][i] for i in range(5))
    assert spray["right"] == 1 and spray["measured"]["collisions"] == 2            # about twice as long
    assert reorder["right"] == 1 and reorder["measured"]["drops"] == 0             # some, none lost
    assert trim["right"] == 0 and trim["measured"]["timeouts"] == 0                # N x block / B and a little
    assert failover["right"] == 1                                                   # REPS first
    assert planes["right"] == 0 and planes["measured"]["value"] == pytest.approx(7 / 8, rel=0.03)


def test_the_framing_question_reads_its_answer_off_the_header_sizes(tmp_path):
    q = questions.ch9_framing(path=str(tmp_path / "p.json"))
    assert q.measure()["value"] == pytest.approx(100 * 1024 / (1024 + 14 + 44 + 24))
