"""`kvproof serve`: a Python target served over the wire protocol (docs/protocol.md)."""

from __future__ import annotations

import sys

import click

from .app import main
from .options import rules_option


@main.command(
    epilog="""\b
Examples:
  kvproof serve --stdio --target reference            # another language's suite asks the reference
  kvproof serve --http 0 --target impl-lanes          # the concurrent tree on a free loopback port
  kvproof check --target "exec:kvproof serve --stdio --target reference"
"""
)
@click.option(
    "--target",
    "target_name",
    default="reference",
    show_default=True,
    help="the Python target served: reference, reference@RULES, impl, impl-lanes, impl-pool, dynamo, "
    "or module.path:Factory (a broken twin)",
)
@rules_option()
@click.option("--stdio", is_flag=True, help="speak the protocol on stdin and stdout, one JSON message per line")
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    default=None,
    help="answer POST / on 127.0.0.1:PORT instead (0: a free port; the address is printed)",
)
def serve(target_name: str, rules: str | None, stdio: bool, port: int | None) -> None:
    """Serve a tree over the wire protocol (docs/protocol.md), as an oracle for another language's tests, or as a
    target: `kvproof check --target "exec:kvproof serve --stdio --target reference"`. It serves until its input
    ends (--stdio) or it is stopped (--http); exit 2 on a usage error or a target that cannot be made."""
    from ..stateful_tests.harness.wire_server import run

    sys.exit(run(target_name, rules, stdio, port))
