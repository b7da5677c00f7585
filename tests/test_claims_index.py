"""Every claim a chapter makes about a measurement has exactly one test, and every claim test
belongs to a sentence a chapter still makes (the mechanism: tests/claims.py)."""
import collections

from claims import notebook_claims, claims_in_tests


def test_every_marked_claim_has_one_test_and_every_claim_test_a_sentence():
    in_labs = notebook_claims()
    in_tests = claims_in_tests()
    twice = [c for c, n in collections.Counter(c for c, *_ in in_labs).items() if n > 1]
    assert not twice, f"claim ids used by more than one sentence: {twice}"
    tested = collections.defaultdict(list)
    for c, where in in_tests:
        tested[c].append(where)
    doubled = {c: w for c, w in tested.items() if len(w) > 1}
    assert not doubled, f"claims checked by more than one test: {doubled}"
    untested = [(c, nb, i) for c, nb, i in in_labs if c not in tested]
    assert not untested, "chapter claims without a test (id, notebook, cell): " + repr(untested)
    stated = {c for c, *_ in in_labs}
    orphans = {c: w for c, w in tested.items() if c not in stated}
    assert not orphans, f"claim tests whose sentence no chapter makes any more: {orphans}"
