"""The gate as pytest items: ``pytest --kvproof-target=module.path:Factory``.

Installed with kvproof (entry point ``pytest11``), so in any project::

    pytest --kvproof-target=mypkg.tree:MyTree                 # the tree rows, ci profile
    pytest --kvproof-target=impl --kvproof-family=all --kvproof-profile=quick
    pytest --kvproof-target=reference --kvproof-only=vectors --junitxml=gate.xml

With ``--kvproof-target`` the session collects the gate's rows (``kvproof.gate``), one item per
row, instead of test files: the same check functions ``kvproof check`` runs, so pytest's own
reporting, ``-k`` selection, ``--junitxml`` and CI integrations apply. A row that fails is a
failed test whose message carries the replay command; a row that cannot run here is a skip
with the reason (pytest's ``-rs`` shows it). Without the option this plugin does nothing.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kvproof", "kvproof gate")
    group.addoption(
        "--kvproof-target",
        default=None,
        metavar="TARGET",
        help="run the kvproof gate against TARGET (reference, impl, impl-lanes, impl-pool, dynamo, module.path:Factory)",
    )
    group.addoption("--kvproof-profile", default=None, metavar="NAME", help="quick, ci or deep (default: $KVPROOF_PROFILE or ci)")
    group.addoption(
        "--kvproof-family",
        action="append",
        default=None,
        metavar="FAMILY",
        help="tree, sequences, deepinfer, proofs or all (repeatable; default: all for impl, tree otherwise)",
    )
    group.addoption(
        "--kvproof-only", default=None, metavar="NAME", help="only the rows whose family, layer or name contains NAME"
    )
    group.addoption("--kvproof-seed", type=int, default=None, metavar="SEED", help="the gate's seed (replay a deep run)")


class GateRowFailed(Exception):
    """A gate row failed; the message is its detail and replay command."""


class GateFamily(pytest.Collector):
    """The parent of one family's rows (node id ``kvproof-gate/<family>``, JUnit class ``kvproof-gate.<family>``)."""

    def collect(self) -> list[Any]:
        return []  # the rows are made by pytest_collection_modifyitems


class GateItem(pytest.Item):
    def __init__(self, *, check: Any, context: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check, self.context = check, context

    def runtest(self) -> None:
        from .gate import Result, run_check

        row = run_check(self.check, self.context)
        self.user_properties += [("checks", row.checks), ("examples", row.examples)]
        if row.result is Result.SKIP:
            pytest.skip(row.detail)
        if row.result is Result.FAIL:
            raise GateRowFailed(f"{row.detail}\nreplay: {row.replay}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, GateRowFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        return ("kvproof gate", 0, f"{self.check.family}: {self.check.name}")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    name = config.getoption("--kvproof-target")
    if not name:
        return
    from .gate import FAMILIES, plan
    from .stateful_tests.harness.profiles import profile_named
    from .stateful_tests.harness.targets import load_target

    target = load_target(name)
    if not target.available:
        raise pytest.UsageError(f"--kvproof-target {name!r} is unavailable: {target.reason}")
    assert target.factory is not None
    chosen = config.getoption("--kvproof-family")
    families = FAMILIES if chosen and "all" in chosen else tuple(chosen) if chosen else None
    unknown = set(families or ()) - set(FAMILIES)
    if unknown:
        raise pytest.UsageError(f"--kvproof-family: unknown {sorted(unknown)}; one of {', '.join(FAMILIES)}, all")
    ctx, selection = plan(
        name,
        target.factory,
        profile_named(config.getoption("--kvproof-profile")),
        config.getoption("--kvproof-seed"),
        config.getoption("--kvproof-only"),
        families,
    )
    if items:
        config.hook.pytest_deselected(items=list(items))
    parents = {f: GateFamily.from_parent(session, name=f"kvproof-gate/{f}") for f in selection.families}
    items[:] = [GateItem.from_parent(parents[c.family], name=c.name, check=c, context=ctx) for c in selection.checks]


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("--kvproof-target")
    return f"kvproof gate: target={name}" if name else None
