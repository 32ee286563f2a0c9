"""The DeepInfer rule family's rows of the gate (``kvproof check``, layer ``deepinfer``).

- golden numbers: every printed line of labs 23, 24 and 25 reproduced by the spec (the lab 24
  line includes the exhaustive check over its 69,666 cases);
- round-trip laws on numpy, and on torch CPU tensors (skipped, visibly, when torch is absent:
  install the ``[torch]`` extra);
- negative controls: every deliberately broken round trip is caught by the laws ``CAUGHT_BY``
  names, each weak-test trap's weak check passes its mutant and its strong check catches it,
  and a wrong decode rule breaks the lab 23 golden lines.

These rows do not use the tree target (``ctx.factory``). The profile's ``deepinfer.roundtrip_cases``
sets the cases per law; a failure replays with ``kvproof roundtrip --backend B --seed S --count N``.
"""

from __future__ import annotations

from . import Check, Context, Failed, Row, Skip


def _golden(ctx: Context, row: Row) -> None:
    from ..stateful_tests.deepinfer.golden import GOLDENS, golden_problems

    problems = []
    for golden in GOLDENS:
        compared, found = golden_problems(golden)
        row.examples += 1
        row.checks += compared
        problems += found
    row.examples += 69_666  # the lab 24 domain, checked inside its last line
    if problems:
        row.replay = "kvproof deepinfer-labs"
        raise Failed(f"{len(problems)} printed lines differ; first: {problems[0]}")


def _laws(backend_name: str):
    def run(ctx: Context, row: Row) -> None:
        from ..stateful_tests.deepinfer.roundtrip_laws import run_suite

        count = ctx.profile.deepinfer.roundtrip_cases
        report = run_suite(backend_name, seed=ctx.seed, count=count)
        if report.skipped:
            raise Skip(report.skipped)
        row.examples, row.checks = report.cases, report.checks
        if report.failed:
            result = report.failed[0]
            case, message = result.problems[0]
            row.replay = f"{report.replay(case)} --count {count}"
            raise Failed(
                f"{len(report.failed)} laws fail; first: {result.law.name} ({result.law.title}) "
                f"on case {case.index} [{case.name}]: {message}"
            )

    return run


def _torch_applies(ctx: Context) -> str | None:
    from ..stateful_tests.deepinfer.backends import backend

    return backend("torch").reason


def _controls(ctx: Context, row: Row) -> None:
    from ..spec.service_queue import lab23_report
    from ..stateful_tests.deepinfer.golden import BOOK_LAB23_SERVICE
    from ..stateful_tests.deepinfer.mutants import run_controls

    results = run_controls(seed=ctx.seed, count=ctx.profile.deepinfer.roundtrip_cases)
    row.examples = len(results) + 1
    row.checks = len(results) + 1
    bad = [r for r in results if not r.ok and not r.skipped]
    skipped = [r for r in results if r.skipped]
    if lab23_report("same-rank") == BOOK_LAB23_SERVICE.splitlines():
        bad_golden = "the 'same-rank' decode rule reproduces lab 23: the golden check cannot tell the rules apart"
    else:
        bad_golden = None
    if bad or bad_golden:
        row.replay = "kvproof roundtrip --backend numpy --controls"
        raise Failed(bad_golden or f"{len(bad)} controls fail; first: {bad[0].name}: {bad[0].detail}")
    if skipped:
        raise Skip(f"{len(skipped)} controls cannot run here ({', '.join(r.name for r in skipped)}): {skipped[0].skipped}")


CHECKS: list[Check] = [
    Check(
        "deepinfer",
        "deepinfer",
        "golden numbers (ch. 11 labs)",
        _golden,
        what="every printed line of the chapter's labs 23-25, reproduced by spec/",
    ),
    Check(
        "deepinfer",
        "deepinfer",
        "round-trip laws, numpy",
        _laws("numpy"),
        what="impl.state_roundtrip on numpy arrays obeys the 19 round-trip laws",
    ),
    Check(
        "deepinfer",
        "deepinfer",
        "round-trip laws, torch CPU",
        _laws("torch"),
        _torch_applies,
        what="impl.state_roundtrip on torch CPU tensors obeys the 19 round-trip laws",
    ),
    Check(
        "deepinfer",
        "deepinfer",
        "negative controls and traps",
        _controls,
        what="each broken round trip is caught by its laws; each weak-test trap is shown weak and its strong check catches it",
    ),
]
