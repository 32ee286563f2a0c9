"""The shared vocabulary of the commands: parameter types, option decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import click

from ..report import EXIT_USAGE

DEFAULT_TARGET = "impl"


class InputProblem(click.ClickException):
    """An input the command cannot use (a file that does not read, a token that does not parse): exit 2, the message
    on stderr as the room wrote it (it names the command and the line)."""

    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


class EnvironmentProblem(InputProblem):
    """This machine lacks what the command needs (an extra, Chromium, Dynamo, a checkout): exit 2, never 1, which
    the README keeps for a failed check."""

    def show(self, file: Any = None) -> None:
        message = self.format_message()
        click.echo(message if message.startswith("kvproof") else f"kvproof: {message}", err=True)


class TargetType(click.ParamType):
    """A tree target by name (``kvproof.stateful_tests.harness.targets``), loaded and checked to be available."""

    name = "TARGET"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..stateful_tests.harness.targets import Target, load_target

        if isinstance(value, Target):
            return value
        target = load_target(value)
        if not target.available:
            self.fail(f"{value!r} is unavailable: {target.reason}", param, ctx)
        return target


TARGET = TargetType()


def target_option(
    help_text: str = "the tree under test", default: str = DEFAULT_TARGET
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--target",
        "target",
        type=TARGET,
        default=default,
        show_default=True,
        help=f"{help_text}: reference, reference@RULES, impl, impl-lanes, impl-pool, dynamo, dynamo-indexer[@N], "
        "dynamo-selection[@N], module.path:Factory, or a tree in any language over the wire protocol "
        "(docs/protocol.md): exec:CMD or http://127.0.0.1:PORT",
    )


def seed_option(default: int | None = 1, help_text: str = "the run's seed") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--seed", type=int, default=default, show_default=default is not None, help=help_text)


def _parse_shard(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    from ..stateful_tests.harness.shards import WHOLE, Shard, ShardError

    if value is None:
        return WHOLE
    try:
        return Shard.parse(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


def _processes(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    from ..stateful_tests.harness.shards import processes_choice

    return processes_choice(value)


def shard_options(work: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--shard K/N``, ``--processes P`` and ``--executor local|ray``: the campaign split (stateful_tests/harness/shards.py).

    ``--processes`` has one default on every command: $KVPROOF_PROCESSES, else the machine's cores
    (``shards.processes_choice``).
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--executor",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help="run the parts in a local process pool, or as Ray tasks (RAY_ADDRESS, else ray.init() here; the [ray] extra)",
        )(f)
        f = click.option(
            "--processes",
            type=click.IntRange(1),
            default=None,
            callback=_processes,
            help=f"spread this shard's {work} over this many processes (or Ray tasks; 1: one after another in "
            f"this process); default: $KVPROOF_PROCESSES, else the machine's cores",
        )(f)
        return click.option(
            "--shard",
            callback=_parse_shard,
            default=None,
            metavar="K/N",
            help=f"run only shard K of N: the {work} numbered i with i % N == K-1 (the shards' union is the whole run)",
        )(f)

    return decorate


json_option = click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="also write the report as JSON (with a schema version) to this file",
)
allow_skip_option = click.option("--allow-skip", is_flag=True, help="exit 0 when something was skipped (a skip is never a pass)")


def profile_option(
    help_text: str = "quick (pre-commit, about 20 s on 2 cores), ci or deep", among: tuple[str, ...] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--profile``, the same option with the same default on every command: $KVPROOF_PROFILE (when the command offers
    it), else ci (``profiles.profile_choice``)."""
    from ..stateful_tests.harness.profiles import PROFILES

    return click.option(
        "--profile",
        type=click.Choice(list(among or PROFILES)),
        default=None,
        help=f"{help_text}; default: $KVPROOF_PROFILE or ci",
    )


def rules_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    from ..spec.rules import RULE_SETS

    return click.option(
        "--rules",
        type=click.Choice(list(RULE_SETS)),
        default=None,
        help="the rule set the reference follows (spec/rules.py; docs/releases.md); default: detected from "
        "the installed ai-dynamo-runtime when Dynamo is involved, else dynamo-1.6",
    )


strict_option = click.option(
    "--strict", is_flag=True, help="known findings (docs/*-findings.md) fail instead of passing as known"
)
strict_shape_option = click.option(
    "--strict-shape",
    is_flag=True,
    help="early_exit differences (which depend on node boundaries, F7) fail instead of being reported",
)


class NamedTracker(NamedTuple):
    """A slot tracker as the commands take it: the name it was given by and its factory."""

    name: str
    factory: Callable[..., Any]


class TrackerType(click.ParamType):
    """A slot tracker by name: ``spec``, ``reference``, ``impl``, a broken twin of ``stateful_tests/sequences/mutants.py``
    by its class name (``NoSpillover``), or ``module.path:Class``; converted to a ``NamedTracker``."""

    name = "TRACKER"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, NamedTracker):
            return value
        from ..stateful_tests.harness.targets import import_factory
        from ..stateful_tests.sequences.model import TARGETS
        from ..stateful_tests.sequences.mutants import FAULT_MUTANTS, MUTANTS

        twins = {m.__name__: m for m in (*MUTANTS, *FAULT_MUTANTS)}
        if value in TARGETS:
            return NamedTracker(value, TARGETS[value])
        if value in twins:
            return NamedTracker(value, twins[value])
        factory, reason = import_factory(value)
        if factory is None:
            self.fail(
                f"{reason}; use {', '.join(TARGETS)}, a broken twin ({', '.join(sorted(twins)[:3])}, ...) or module.path:Class",
                param,
                ctx,
            )
        return NamedTracker(value, factory)


TRACKER = TrackerType()


class StructureType(click.ParamType):
    """A concurrent structure the explorer runs its scenarios on: ``impl`` (``impl-lanes``, ``impl-pool``), a broken
    structure by its short name (``kvproof explore --list``), or ``module.path:Factory``; the name itself is passed on
    (the explorer resolves it, ``campaign.subject_for``)."""

    name = "STRUCTURE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..stateful_tests.explore.campaign import broken_subjects

        broken = broken_subjects()
        if value in ("impl", "impl-lanes", "impl-pool") or value in broken or ":" in str(value):
            return value
        self.fail(
            f"{value!r} is not a structure the explorer knows: impl, module.path:Factory, or a broken structure "
            f"({', '.join(sorted(broken))})",
            param,
            ctx,
        )


STRUCTURE = StructureType()


class SoakTargetType(click.ParamType):
    """What ``kvproof soak`` runs: a tree or tracker soak target by name (``reference``, ``impl``, ``impl-lanes``,
    ``impl-pool``), a leaking twin of either family's soak module (``LEAKY``), ``reference@RULES`` or
    ``module.path:Factory``; the room refuses a name its ``--family`` does not have."""

    name = "SOAK_TARGET"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..stateful_tests.sequences.soak import TRACKERS
        from ..stateful_tests.tree.soak import LEAKY, SOAK_TREES

        known = (*SOAK_TREES, *LEAKY, *TRACKERS)
        if value in known or ":" in str(value) or str(value).startswith("reference@"):
            return value
        self.fail(
            f"{value!r} is not a soak target: {', '.join(dict.fromkeys(known))}, reference@RULES or module.path:Factory",
            param,
            ctx,
        )


SOAK_TARGET = SoakTargetType()


def model_option(default: str, help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--model TRACKER``: the slot tracker a sequence campaign runs (``TrackerType``)."""
    return click.option("--model", type=TRACKER, default=default, show_default=True, help=help_text)


def trace_option(
    help_text: str = "a Mooncake-format trace (default: the 1,000-request slice shipped with kvproof; the "
    "full conversation trace only when named, e.g. ../shared/data/mooncake/conversation_trace.jsonl)",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--trace PATH``: the one spelling of a Mooncake trace, for every command that replays one."""
    return click.option("--trace", "trace", type=click.Path(dir_okay=False), default=None, metavar="PATH", help=help_text)
