"""The command is a thin layer: every click command's body (its statements after the docstring) is at most
``MAX_BODY`` lines, so campaign logic lives in the rooms (``run_*()``), never in ``kvproof/cli/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[1] / "cli"
MAX_BODY = 30
COMMAND_DECORATORS = {"command", "group"}


def _is_command(fn: ast.FunctionDef) -> bool:
    """A function decorated ``@<group>.command(...)``, ``@main.group(...)``, ``@click.command`` and the like."""
    for deco in fn.decorator_list:
        call = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(call, ast.Attribute) and call.attr in COMMAND_DECORATORS:
            return True
    return False


def body_lines(fn: ast.FunctionDef) -> int:
    """Lines from the first statement after the docstring to the end of the function (0 for a docstring only)."""
    body = fn.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if not body:
        return 0
    return (fn.end_lineno or body[-1].end_lineno or 0) - body[0].lineno + 1


def command_bodies(source: str, where: str) -> dict[str, int]:
    """``{"module:function": body lines}`` of every click command callback in ``source``."""
    tree = ast.parse(source)
    return {f"{where}:{fn.name}": body_lines(fn) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _is_command(fn)}


def all_command_bodies() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(CLI.glob("*.py")):
        found |= command_bodies(path.read_text(), path.stem)
    return found


def test_every_command_module_is_seen():
    bodies = all_command_bodies()
    assert len(bodies) >= 25, sorted(bodies)  # every command of kvproof --help and of its groups


def test_no_command_body_is_over_the_limit():
    bodies = all_command_bodies()
    over = {name: n for name, n in bodies.items() if n > MAX_BODY}
    assert not over, f"command bodies over {MAX_BODY} lines (move the logic into the room's run_*()): {over}"


def test_the_longest_body_is_reported():
    name, n = max(all_command_bodies().items(), key=lambda item: item[1])
    print(f"longest command body: {name} ({n} lines)")  # shown with pytest -s
    assert 0 < n <= MAX_BODY


@pytest.mark.parametrize("lines, caught", [(MAX_BODY, False), (MAX_BODY + 1, True)])
def test_negative_control_a_31_line_body_is_caught(lines, caught):
    """A made-up command with a body of exactly ``lines`` statements: 30 passes, 31 is caught."""
    statements = "\n".join(f"    x{i} = {i}" for i in range(lines))
    source = f'@main.command()\n@click.option("--n")\ndef fat(n):\n    """Doc."""\n{statements}\n'
    bodies = command_bodies(source, "control")
    assert bodies == {"control:fat": lines}
    assert (bodies["control:fat"] > MAX_BODY) is caught


def test_a_plain_helper_is_not_a_command():
    source = "def helper():\n" + "\n".join(f"    x{i} = {i}" for i in range(40)) + "\n"
    assert command_bodies(source, "control") == {}


def test_help_lists_the_commands_in_workflow_order(kvproof_cli):
    from kvproof.cli import main
    from kvproof.cli.app import WORKFLOW

    assert set(main.commands) == set(WORKFLOW), "add a new command to WORKFLOW in kvproof/cli/app.py"
    ran = kvproof_cli("--help")
    listed = [line.split()[0] for line in ran.out.split("Commands:")[1].splitlines() if line.startswith("  ") and line.split()]
    assert listed == list(WORKFLOW) and listed[0] == "check"


def test_every_group_shows_examples(kvproof_cli):
    """Each command group (and the front-door commands) shows a few invocations in its help."""
    for args in (
        ("conform",),
        ("replay",),
        ("stress",),
        ("bench",),
        ("check",),
        ("explore",),
        ("fuzz",),
        ("trace",),
        ("releases",),
        ("docs",),
    ):
        ran = kvproof_cli(*args, "--help")
        assert ran.code == 0 and "Examples:" in ran.out and f"kvproof {args[0]} " in ran.out.split("Examples:")[1], args
