"""Each room's ``__init__`` is its index: it names every module in the room, and the package's names every room
(kvproof issue 33, "true maps")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rooms(root: Path) -> list[Path]:
    """The rooms of ``root``: its sub-packages, the tests folder aside."""
    return sorted(p for p in root.iterdir() if (p / "__init__.py").is_file() and p.name != "tests")


def unlisted(folder: Path) -> list[str]:
    """The modules (and sub-packages) of ``folder`` its ``__init__`` docstring does not name as ````name````."""
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    names = sorted({p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {p.name for p in rooms(folder)})
    return [name for name in names if f"``{name}``" not in doc]


def test_every_room_lists_its_modules():
    missing = {room.name: unlisted(room) for room in rooms(ROOT)}
    assert not {room: names for room, names in missing.items() if names}


def test_the_package_lists_its_rooms():
    assert unlisted(ROOT) == []


def test_a_module_missing_from_the_index_is_named(tmp_path):
    """The negative control: a room whose docstring forgets a module."""
    room = tmp_path / "room"
    room.mkdir()
    (room / "__init__.py").write_text('"""A room.\n\n- ``listed``: here\n"""\n')
    (room / "listed.py").write_text("")
    (room / "forgotten.py").write_text("")
    assert unlisted(room) == ["forgotten"]
