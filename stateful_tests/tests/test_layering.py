"""The layering rules of the developers' guide, checked on the source."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_spec_imports_nothing_from_the_other_layers():
    for path in (ROOT / "spec").glob("*.py"):
        for name in imports_of(path):
            assert not name.startswith(".."), f"{path.name} imports {name}"
            assert not any(layer in name for layer in ("reference", "impl", "stateful_tests", "proofs", "kvproof")), (path.name, name)


def test_only_impl_sync_imports_threading():
    for path in (ROOT / "impl").glob("*.py"):
        if path.name == "_sync.py":
            continue
        assert not {"threading", "_thread", "concurrent.futures"} & imports_of(path), f"{path.name} imports threading"


def test_reference_does_not_import_impl():
    for path in (ROOT / "reference").glob("*.py"):
        assert not any("impl" in name for name in imports_of(path)), path.name
