"""Explain differences: search the rule variants for one under which the subject agrees exactly.

Given counterexamples (shrunk ones from a conformance run, or a log), ``explain`` replays
each against the reference under the run's rule set, then under that rule set with one
variant of ``spec.rules`` switched (on or off), then with two. The first variant sets under
which *every* counterexample agrees exactly (no difference of any kind, early-exit
included; only differences a known finding explains are allowed) are the explanation:
"behaves like the spec with <variant> (<upstream reference>)". If none does, the verdict is
"no variant explains it: likely a bug", with the differences that remain under the rule
set in force as evidence. A contract difference is never explained: the contract is the
same under every rule set.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...spec.rules import RuleSet, Variant, with_variants
from .conformance import compare_prefix
from .streams import Op
from .verdicts import CONTRACT, EARLY_EXIT, Difference

Factory = Callable[[], Any]


@dataclass(frozen=True)
class Counterexample:
    """Operations, with the queries asked after them (at the end), and where they came from."""

    name: str
    ops: list[Op]
    queries: list[list[int]]  # asked at the end
    after: list[list[list[int]]] | None = None  # asked after each operation (a log's own queries)


@dataclass
class Explanation:
    base: RuleSet
    tried: list[tuple[frozenset[Variant], int]] = field(default_factory=list)  # (variants, counterexamples still differing)
    explained_by: list[frozenset[Variant]] = field(default_factory=list)
    evidence: list[tuple[str, Difference]] = field(default_factory=list)  # under the base rule set
    contract: bool = False
    unexplained: str = ""  # the run differed, but nothing could be shrunk to explain (exit 1)
    kind = "explain"
    skipped = ""

    @property
    def ok(self) -> bool:
        """Nothing differed, or a variant explains every difference."""
        return not self.unexplained and (not self.evidence or bool(self.explained_by))

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        if not self.unexplained:
            for line in self.report().splitlines()[:-1]:  # the last one is the summary line
                say(line)

    def summary_line(self) -> str:
        return self.unexplained or self.report().splitlines()[-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base.name,
            "verdict": self.unexplained or self.verdict(),
            "explained_by": [sorted(str(v) for v in vs) for vs in self.explained_by],
            "evidence": [{"case": name, "kind": d.kind, "detail": d.detail} for name, d in self.evidence],
        }

    def verdict(self) -> str:
        if not self.evidence:
            return f"the subject agrees exactly with the spec under {self.base.describe()}: nothing to explain"
        lines = []
        if not self.explained_by:
            if self.contract:
                return "no variant explains it: the contract violations are bugs under every rule set"
            return "no variant explains it: likely a bug"
        for variants in self.explained_by:
            switched = sorted(variants ^ self.base.variants)
            rules = with_variants(variants)
            refs = "; ".join(f"{v}: {v.upstream}" for v in switched)
            turned = ", ".join(f"{'with' if v in variants else 'without'} {v}" for v in switched)
            lines.append(f"behaves like the spec {turned} (rule set {rules.name}; {refs})")
        return "\n".join(lines)

    def report(self) -> str:
        out = [f"explain: base rule set {self.base.describe()}"]
        for name, d in self.evidence:
            out.append(f"  under {self.base.name}: {name}: [{d.label()}] {d.detail}")
        for variants, left in self.tried:
            switched = ", ".join(f"{'+' if v in variants else '-'}{v}" for v in sorted(variants ^ self.base.variants))
            out.append(f"  tried {switched or '(base)'}: {left} counterexample(s) still differ")
        out += [f"explain: {line}" for line in self.verdict().splitlines()]
        return "\n".join(out)


def _left_over(subject: Factory, oracle: Factory, example: Counterexample) -> list[Difference]:
    found, _ = compare_prefix(subject, oracle, example.ops, example.after, example.queries)
    # "Exactly": early_exit differences count (a variant may explain the shape, F7); only a known
    # finding that is not about shape (F2, the dump) is left out.
    return [d for d in found if d.known is None or d.kind == EARLY_EXIT]


def candidates(base: RuleSet) -> list[frozenset[Variant]]:
    """The variant sets tried after the base: one variant of the base's component switched, then two."""
    names = sorted(v for v in Variant if v.tree and v.component == base.component)
    singles = [base.variants ^ {v} for v in names]
    pairs = [base.variants ^ {v, w} for v, w in itertools.combinations(names, 2)]
    return singles + pairs


def explain(
    subject: Factory, examples: list[Counterexample], base: RuleSet, reference: Callable[[RuleSet], Factory]
) -> Explanation:
    """Search the variants for a rule set under which ``subject`` agrees with the reference on every example.

    ``reference(rules)`` makes the oracle factory for a rule set. Single switches are tried
    before pairs; the search stops at the first size that explains everything.
    """
    result = Explanation(base)
    for example in examples:
        for d in _left_over(subject, reference(base), example):
            result.evidence.append((example.name, d))
    if not result.evidence:
        return result
    # A contract difference under the base may be explained by a variant that changes what an event
    # means (cleared-clears-worker); one that no variant removes is a bug under every rule set.
    result.contract = any(d.kind == CONTRACT for _, d in result.evidence)
    examples = [e for e in examples if any(name == e.name for name, _ in result.evidence)]
    size_found = None
    for variants in candidates(base):
        size = len(variants ^ base.variants)
        if size_found is not None and size > size_found:
            break
        oracle = reference(with_variants(frozenset(variants)))
        left = sum(1 for example in examples if _left_over(subject, oracle, example))
        result.tried.append((frozenset(variants), left))
        if left == 0:
            result.explained_by.append(frozenset(variants))
            size_found = size
    return result


def explain_command(
    log_file: str | None, target: Any, rules: str | None, streams: int, seed: int, examples: int, say: Callable[[str], None]
) -> Explanation:
    """``kvproof explain``: the counterexample of a log, or the shrunk ones of a conformance run against the reference
    under the detected rule set, explained by the rule variants. The plain reference (which follows whatever rule
    set it is given) or a log that does not read is refused."""
    from pathlib import Path

    from ..harness import targets
    from ..harness.errors import CampaignInputError
    from .log import LogError, read_log
    from .replay import queries_of

    if target.name == "reference" and rules is None:
        raise CampaignInputError("the reference follows the rule set it is given; explain another tree", param="--target")
    base, note = targets.resolve_rules(target.name, override=rules)
    say(f"explain: {note}")

    def reference(rule_set: RuleSet) -> Factory:
        return targets.load_target("reference", rule_set).factory  # type: ignore[return-value]

    if log_file:
        try:
            log = read_log(Path(log_file))
        except LogError as exc:
            raise CampaignInputError(f"explain: {exc}") from None
        after, final = queries_of(log)
        cases = [Counterexample(log_file, log.ops, final, after)]
    else:
        cases, differs = _shrunk_cases(target, reference(base), base, streams, seed, examples, say)
        if differs and not cases:
            return Explanation(
                base,
                unexplained="explain: the run differs, but no counterexample could be shrunk to explain; nothing was explained",
            )
    return explain(target.factory, cases, base, reference)


def _shrunk_cases(
    target: Any, reference: Factory, base: RuleSet, streams: int, seed: int, examples: int, say: Callable[[str], None]
) -> tuple[list[Counterexample], bool]:
    """A conformance run of ``target`` against the reference under ``base``: its shrunk counterexamples (at most
    ``examples``), and whether it differed at all."""
    from ..harness.targets import capabilities
    from .conformance import conform
    from .streams import DEFAULT_PROFILE, StreamProfile

    profile = DEFAULT_PROFILE if capabilities(target.factory).dp_ranks else StreamProfile(max_dp_ranks=1)
    report = conform(
        target.factory,
        reference,
        streams,
        seed,
        profile,
        subject_name=target.name,
        oracle_name="reference",
        max_reported=examples,
        shrunk_tolerated=examples,
        strict_shape=True,
        rules=base.name,
    )
    say(report.summary_line())
    cases = []
    for m in (report.mismatches + report.tolerated)[:examples]:
        if m.is_shrunk:
            cases.append(Counterexample(f"seed {m.seed} stream {m.stream} [{m.label()}]", m.shrunk, m.query_list))
        else:
            say(
                f"explain: seed {m.seed} stream {m.stream} [{m.label()}] left out: its difference does not "
                f"show by itself outside the stream (regenerate it: {m.replay_command(target.name, 'reference')})"
            )
    return cases, bool(report.mismatches)
