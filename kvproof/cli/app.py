"""The ``kvproof`` group itself: its commands listed in workflow order, and the program entry point.

The commands live one module per group beside this one (``check``, ``conform``, ``replay``, ...); each
registers itself on ``main`` when ``kvproof.cli`` imports it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

WORKFLOW = (
    "check",
    "vectors",
    "conform",
    "replay",
    "explain",
    "explore",
    "stress",
    "fuzz",
    "trace",
    "soak",
    "releases",
    "serve",
    "prove",
    "roundtrip",
    "deepinfer-labs",
    "mutate",
    "bench",
    "docs",
)
"""The order ``kvproof --help`` lists the commands in: the gate first, then the campaigns a failing row leads to
(conformance, replay, explanation, interleavings, stress, hostile input, traffic), then the surveys, the served
oracle, proofs,
DeepInfer, mutation testing, the benchmarks and the site."""


def _refusals_as_exit_2(ctx: click.Context, invoke: Any) -> Any:
    """Run ``invoke(ctx)``; a room's refusal (``harness.errors``) becomes a usage error or an environment problem
    (exit 2, with the message), raised in the command's own context so the usage line is the command's; a campaign
    whose shard died is a failed run (exit 1)."""
    from ..stateful_tests.harness.errors import CampaignInputError, Unavailable
    from ..stateful_tests.harness.shards import ShardError, SuiteRunError
    from .options import EnvironmentProblem, InputProblem

    try:
        return invoke(ctx)
    except CampaignInputError as exc:
        if exc.param:
            raise click.BadParameter(str(exc), ctx=ctx, param_hint=exc.param) from None
        raise InputProblem(str(exc)) from None
    except Unavailable as exc:
        raise EnvironmentProblem(str(exc)) from None
    except (ShardError, SuiteRunError) as exc:  # a shard's process died, pytest did not run: the run failed (exit 1)
        raise click.ClickException(str(exc)) from None


class KvproofCommand(click.Command):
    """A command whose room's refusals exit 2 with their message (``_refusals_as_exit_2``)."""

    def invoke(self, ctx: click.Context) -> Any:
        return _refusals_as_exit_2(ctx, super().invoke)


class WorkflowGroup(click.Group):
    """A click group that lists its commands in ``WORKFLOW`` order (any not named there last, by name); its commands
    and subgroups map a room's refusals to exit 2 (``KvproofCommand``)."""

    command_class = KvproofCommand
    group_class = type  # a subgroup is a WorkflowGroup too

    def list_commands(self, ctx: click.Context) -> list[str]:
        rank = {name: i for i, name in enumerate(WORKFLOW)}
        return sorted(self.commands, key=lambda name: (rank.get(name, len(rank)), name))

    def invoke(self, ctx: click.Context) -> Any:
        return _refusals_as_exit_2(ctx, super().invoke)


NETNS_COMMANDS = frozenset({"check", "conform", "vectors", "trace", "replay", "explain", "bench"})
"""The commands that may start servers (Dynamo's standalone indexer, the slot tracker): run in a private network
namespace by default, where the machine allows one."""


def entry() -> None:
    """The ``kvproof`` program: ``main``, re-executed first inside a private network namespace when it may start servers.

    Dynamo's standalone indexer and slot tracker listen on every interface and have no option to bind
    loopback only. A command of ``NETNS_COMMANDS`` is therefore re-executed (same pid, same arguments) under
    ``unshare --net --map-root-user`` with only ``lo`` up, where the machine allows it (root, or unprivileged
    user namespaces): nothing the run starts can be reached from outside. ``KVPROOF_NETNS=0`` opts out (and
    ``--executor ray`` does, since a Ray cluster needs the machine's network). Where no namespace can be had
    the run's first line says so.
    """
    from ..stateful_tests.harness import process_guard

    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), None)
    wanted = (
        command in NETNS_COMMANDS
        and os.environ.get("KVPROOF_NETNS", "1") != "0"
        and "ray" not in argv
        and not process_guard.in_private_netns()
        and not {"-h", "--help"} & set(argv)
        and not any("http://127.0.0.1:" in a for a in argv)
    )  # a loopback http target lives outside any namespace
    if wanted:
        why = process_guard.netns_unavailable()
        if why is None:
            sys.stdout.flush()
            sys.stderr.flush()
            os.environ[process_guard.NETNS_ENV] = "1"
            os.execvp("unshare", [*process_guard.netns_prefix(), sys.executable, "-m", "kvproof", *argv])
        print(
            f"kvproof: network: no private network namespace here ({why}); a server this run starts (Dynamo's "
            "indexer, the slot tracker) listens on every interface, and kvproof speaks to it on 127.0.0.1 only "
            "(KVPROOF_NETNS=0 to silence)",
            flush=True,
        )
    main()


@click.group(cls=WorkflowGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kvproof")
def main() -> None:
    """kvproof: the executable specification and verification suite for a KV-cache-aware router's state.

    Run `kvproof check` for the gate on the embedded implementation, or point it at your own tree
    with `--target module.path:Factory`. Exit codes: 0 pass, 1 fail, 2 usage error or an environment
    problem (a missing extra, no Chromium, no Dynamo), 3 something was skipped (without --allow-skip).
    """
