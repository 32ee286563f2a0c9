"""`kvproof replay log` (a router's event log through two trees) and `kvproof replay schedule` (one interleaving)."""

from __future__ import annotations

from typing import Any

import click

from ..report import finish
from .app import main
from .options import TARGET, json_option, rules_option, strict_option, strict_shape_option


@main.group(
    epilog="""
\b
Examples:
  kvproof replay log kvproof-failures/contract-impl-vs-dynamo-s1-k3.jsonl --target impl --oracle dynamo
  kvproof replay log events.jsonl                      (the reference under the contract alone)
  kvproof replay schedule 'fanout-vs-split/FanoutWithoutGate/pct.d3.s1#...'
  kvproof replay schedule kvproof-failures/schedules/fanout-vs-split.json --target impl
"""
)
def replay() -> None:
    """Replay what a run saved: a log of router events (`log`), or an explorer schedule (`schedule`)."""


@replay.command("log")
@click.argument("log_file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--target",
    type=TARGET,
    default=None,
    help="the subject to replay the log through (default: only the reference and the contract)",
)
@click.option("--oracle", type=TARGET, default="reference", show_default=True, help="the tree whose answers are taken as right")
@rules_option()
@strict_option
@strict_shape_option
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="write the shrunk reproduction here as a log (default: next to LOG_FILE, .min.jsonl)",
)
@json_option
def replay_log(
    log_file: str,
    target: Any,
    oracle: Any,
    rules: str | None,
    strict: bool,
    strict_shape: bool,
    out_path: str | None,
    json_path: str | None,
) -> None:
    """Replay a log of router events through the contract and two trees side by side.

    LOG_FILE holds RouterEvent JSON lines (as `dump_tree_as_events` writes them and a router's
    recorder stores them) and kvproof's `remove_worker` / `clear_all_blocks` / `find_matches`
    lines. Prints the lines the contract refuses, then the first difference of each kind with its
    log line, and writes the worst one shrunk (same kind) as a log this command replays. The last
    line is `replay: events=E queries=Q differences=D failing=F`; a bad line is exit 2.
    """
    from ..stateful_tests.harness.targets import load_target
    from ..stateful_tests.tree.replay import run_replay_log

    subject = target or load_target("reference")
    report = run_replay_log(
        log_file,
        subject,
        oracle,
        target is not None,
        rules,
        strict,
        strict_shape,
        out_path,
        say=click.echo,
        warn=lambda line: click.echo(line, err=True),
    )
    finish(report, json_path)


@replay.command("schedule")
@click.argument("schedule", metavar="TOKEN|SCHEDULE.json")
@click.option(
    "--target",
    "target_name",
    default=None,
    help="run the schedule on this subject instead of the one it was recorded on (a broken structure's name, "
    "impl, or module.path:Factory)",
)
@json_option
def replay_schedule(schedule: str, target_name: str | None, json_path: str | None) -> None:
    """Run one schedule of the interleaving explorer again, exactly: its history and what it showed.

    TOKEN is SCENARIO/TARGET/STRATEGY/DECISIONS as `kvproof explore` prints it; a schedule file
    (.json) is what it saves. The last line is `replay: outcome=... decisions=D steps=S`.
    """
    from ..stateful_tests.explore.runs import run_replay_schedule

    finish(run_replay_schedule(schedule, target_name), json_path)
