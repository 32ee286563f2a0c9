"""verdicts.py and the conformance classifier: each kind of difference, known findings, kind-keeping shrinking."""

from kvproof.reference import RadixTree
from kvproof.spec.rules import Variant, with_variants
from kvproof.stateful_tests.tree.conformance import _differs, conform
from kvproof.stateful_tests.tree.mutants import SplitDropsCarriedCutoffs, WalkSkipsEqualSizedIntersection
from kvproof.stateful_tests.tree.verdicts import DUMP, EARLY_EXIT, Difference, dump_difference, worst

REUSE = with_variants(frozenset({Variant.REUSE_DEAD_NODES}))


def test_an_over_credit_is_a_contract_difference():
    report = conform(WalkSkipsEqualSizedIntersection, RadixTree, streams=40, seed=1, max_reported=1)
    assert report.mismatches and report.mismatches[0].kind == "contract"
    assert "over-credits" in report.mismatches[0].detail


def test_a_score_difference_within_the_contract_is_a_score_difference():
    """Dropping carried cutoffs on a split undercounts, within what the rank holds: not a contract violation."""
    report = conform(SplitDropsCarriedCutoffs, RadixTree, streams=40, seed=1, max_reported=3)
    kinds = {m.kind for m in report.mismatches}
    assert kinds and kinds <= {"score", "outcome", "contract", "dump"}
    assert report.kinds.counts["score"] + report.kinds.counts["outcome"] + report.kinds.counts["dump"] >= 1


def test_early_exit_differences_are_reported_but_fail_only_under_strict_shape():
    """The reference that reuses dead nodes cuts edges elsewhere: early_exit answers differ, plain scores do not."""
    relaxed = conform(lambda: RadixTree(REUSE), RadixTree, streams=30, seed=1)
    assert relaxed.kinds.counts[EARLY_EXIT] > 0
    assert all(m.kind != "contract" for m in relaxed.mismatches + relaxed.tolerated)
    strict = conform(lambda: RadixTree(REUSE), RadixTree, streams=30, seed=1, strict_shape=True)
    assert len(strict.mismatches) > len(relaxed.mismatches)
    assert any(m.kind == EARLY_EXIT for m in strict.mismatches)


def test_shrinking_keeps_the_kind_of_every_reported_difference():
    report = conform(lambda: RadixTree(REUSE), RadixTree, streams=30, seed=1, max_reported=4, strict_shape=True)
    assert len(report.mismatches) > 4
    for m in report.mismatches[4:]:  # beyond the reported ones nothing is shrunk, and the report says why
        assert not m.is_shrunk and not m.shrink_tried and m.shrunk == m.ops
        said = m.report("s", "o")
        assert "UNSHRUNK" in said and "shrinks its first failing streams" in said and "did not show" not in said
        assert f"--stream {m.stream}" in said and m.to_json()["shrink_tried"] is False
    for m in report.mismatches[:4]:
        assert m.is_shrunk and m.shrink_tried and m.to_json()["shrink_tried"] is True
        target = Difference(m.kind, 0, "", m.known)
        assert _differs(lambda: RadixTree(REUSE), RadixTree, m.shrunk, m.query_list, target), m.label()
        assert len(m.shrunk) <= len(m.ops)


def test_a_run_shrinks_as_many_tolerated_streams_as_asked_and_the_rest_say_they_were_not_tried():
    """``shrunk_tolerated`` (``kvproof explain`` asks for as many as its examples): the first ones are shrunk keeping
    their kind, the later ones keep their streams as they ran and carry ``shrink_tried`` False."""
    for asked in (1, 2):
        report = conform(lambda: RadixTree(REUSE), RadixTree, streams=30, seed=1, shrunk_tolerated=asked)
        assert len(report.tolerated) > asked
        assert [m.shrink_tried for m in report.tolerated] == [True] * asked + [False] * (len(report.tolerated) - asked)
        assert all(len(m.shrunk) < len(m.ops) for m in report.tolerated[:asked])
        assert all(m.shrunk == m.ops for m in report.tolerated[asked:])


def test_f2_recognizer_names_only_unreplayable_extras():
    kept = [(1, 0, None, (10,))]
    orphan = (2, 0, 99, (20,))  # rank (2, 0) never credited 99: a fresh tree refuses it
    d = dump_difference(3, kept + [orphan], kept)
    assert d is not None and d.kind == DUMP and d.known == "F2" and not d.fails()
    assert d.fails(strict=True)
    other = dump_difference(3, kept + [(1, 0, 10, (30,))], kept)  # replayable extra: a real difference
    assert other is not None and other.known is None and other.fails()
    assert dump_difference(3, kept, list(kept)) is None


def test_worst_prefers_the_most_severe_failing_difference():
    ds = [Difference(EARLY_EXIT, 1, ""), Difference(DUMP, 5, "", "F2"), Difference("score", 4, "")]
    assert worst(ds).kind == "score"
    assert worst(ds[:2]) is None
    assert worst(ds[:2], strict_shape=True).kind == EARLY_EXIT
    assert worst(ds[:2], strict=True).kind == DUMP


class EarlyExitOverCredits(RadixTree):
    """Broken: with early_exit the survivor is credited one block more than the full walk gives it."""

    def find_matches(self, sequence, early_exit=False):
        result = super().find_matches(sequence, early_exit)
        if early_exit and len(result.scores) == 1:
            rank = next(iter(result.scores))
            result.scores[rank] += 1
        return result


def test_an_early_exit_answer_that_breaks_the_early_exit_law_is_a_contract_difference():
    report = conform(EarlyExitOverCredits, RadixTree, streams=10, seed=1, max_reported=1)
    assert report.mismatches and report.mismatches[0].kind == "contract"
    assert "breaks the early-exit law" in report.mismatches[0].detail
    clean = conform(RadixTree, RadixTree, streams=10, seed=1)
    assert clean.kinds.counts["contract"] == 0 and not clean.mismatches
