"""explain.py: the variant search finds the variant that explains intended differences, and none for a bug."""

from kvproof.reference import RadixTree
from kvproof.spec.rules import DEFAULT_RULES, RULE_SETS, Variant, with_variants
from kvproof.stateful_tests.tree.conformance import conform
from kvproof.stateful_tests.tree.explain import Counterexample, candidates, explain
from kvproof.stateful_tests.tree.mutants import NoLookupScrub, WalkSkipsEqualSizedIntersection


def reference(rules):
    return lambda: RadixTree(rules)


def examples_of(subject, base=DEFAULT_RULES, streams=20):
    report = conform(subject, reference(base), streams, seed=1, max_reported=4, strict_shape=True)
    return [Counterexample(f"stream {m.stream}", m.shrunk, m.query_list) for m in report.mismatches if m.is_shrunk]


def test_candidates_switch_one_variant_then_two():
    # wire-format variants do not change the tree; the concurrent tree's variants are not the single-threaded tree's
    n = len([v for v in Variant if v.tree and v.component == "tree"])
    singles = [c for c in candidates(DEFAULT_RULES) if len(c) == 1]
    assert len(singles) == n and len(candidates(DEFAULT_RULES)) == n + n * (n - 1) // 2
    assert not any(Variant.REMOVAL_SKIPS_UNKNOWN in c for c in candidates(DEFAULT_RULES))


def test_a_subject_that_reuses_dead_nodes_is_explained_by_that_variant():
    """A stand-in for ai-dynamo-runtime 1.4-1.5: the reference under dynamo-1.4 judged by 1.6's rules."""
    subject = reference(RULE_SETS["dynamo-1.4"])
    cases = examples_of(subject)
    assert cases
    result = explain(subject, cases, DEFAULT_RULES, reference)
    assert result.evidence and not result.contract
    assert frozenset({Variant.REUSE_DEAD_NODES}) in result.explained_by
    assert "behaves like the spec with reuse-dead-nodes" in result.verdict() and "PR #14878" in result.verdict()


def test_under_its_own_rule_set_a_subject_has_nothing_to_explain():
    """The counterexamples that differ under 1.6's rules agree exactly under the subject's own rule set."""
    subject = reference(RULE_SETS["dynamo-1.4"])
    cases = examples_of(subject)
    assert cases and explain(subject, cases, DEFAULT_RULES, reference).evidence
    result = explain(subject, cases, RULE_SETS["dynamo-1.4"], reference)
    assert not result.evidence and "nothing to explain" in result.verdict()


def test_a_whole_worker_clear_is_explained_by_its_variant_not_called_a_bug():
    """What a cleared event means is a variant: the contract difference it makes under 1.6's rules is explained."""
    subject = reference(RULE_SETS["dynamo-1.3"])
    cases = examples_of(subject, streams=30)
    result = explain(subject, cases, RULE_SETS["dynamo-1.4"], reference)
    assert result.explained_by and all(Variant.CLEARED_CLEARS_WORKER in v for v in result.explained_by), result.report()


def test_a_missing_lookup_scrub_is_likely_a_bug():
    """Outcome differences within the contract that no variant explains."""
    cases = examples_of(NoLookupScrub, streams=30)
    assert cases
    result = explain(NoLookupScrub, cases, DEFAULT_RULES, reference)
    assert not result.contract and len(result.tried) == len(candidates(DEFAULT_RULES))
    assert not result.explained_by and "likely a bug" in result.verdict()


def test_an_over_credit_is_never_explained():
    cases = examples_of(WalkSkipsEqualSizedIntersection, streams=30)
    result = explain(WalkSkipsEqualSizedIntersection, cases, DEFAULT_RULES, reference)
    assert result.contract and not result.explained_by
    assert "the contract violations are bugs under every rule set" in result.verdict()
    assert with_variants(frozenset()) is DEFAULT_RULES
