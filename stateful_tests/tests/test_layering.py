"""The layering rules of the developers' guide and CONTRIBUTING.md's "Layout" section, checked on the source.

Each module's imports (top level and function-local, relative ones resolved) are mapped to the
room they land in, and every room may import only the rooms ``MAY_IMPORT`` lists. Test files
(``test_*.py``, ``conftest.py``) may import anything but the command's internals are kept out
of the library rooms.
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("spec", "reference", "impl", "stateful_tests", "proofs")

# room -> the rooms its library modules may import (besides itself and third-party packages)
MAY_IMPORT = {
    "spec": set(),
    "reference": {"spec"},
    "impl": {"spec", "reference"},  # reference's single-threaded cores only: REFERENCE_CORES_IN_IMPL
    "proofs": {"spec", "reference"},
    "stateful_tests.harness": {"spec", "reference", "impl"},
    "stateful_tests.tree": {"spec", "reference", "impl", "stateful_tests.harness"},
    "stateful_tests.sequences": {"spec", "reference", "impl", "stateful_tests.harness"},
    "stateful_tests.deepinfer": {"spec", "reference", "impl", "stateful_tests.harness"},
    # the explorer runs the tree's and the tracker's structures (and their broken twins); they never import it
    "stateful_tests.explore": {
        "spec",
        "reference",
        "impl",
        "stateful_tests.harness",
        "stateful_tests.tree",
        "stateful_tests.sequences",
    },
    # the fuzzer throws hostile input at every tree through the harness's targets
    "stateful_tests.fuzz": {"spec", "reference", "impl", "stateful_tests.harness"},
    # mutation testing runs mutmut over copies of the layers; it imports only the harness's shards and process guard
    "stateful_tests.mutation": {"spec", "stateful_tests.harness"},
    "stateful_tests": {
        "spec",
        "reference",
        "impl",
        "stateful_tests.harness",
        "stateful_tests.tree",
        "stateful_tests.sequences",
        "stateful_tests.deepinfer",
        "stateful_tests.explore",
        "stateful_tests.fuzz",
        "stateful_tests.mutation",
    },
    "kvproof": {
        "spec",
        "reference",
        "impl",
        "proofs",
        "stateful_tests",
        "stateful_tests.harness",
        "stateful_tests.tree",
        "stateful_tests.sequences",
        "stateful_tests.deepinfer",
        "stateful_tests.explore",
        "stateful_tests.fuzz",
        "stateful_tests.mutation",
    },
}
# impl's slot tracker wraps the reference's ActiveSequences; impl's trees read events as the reference does (wire)
REFERENCE_CORES_IN_IMPL = {"kvproof.reference.sequences", "kvproof.reference.wire"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] != "kvproof":
        parts.insert(0, "kvproof")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names |= {f"{module}.{a.name}" for a in node.names}  # `from . import targets` imports a module
    return names


def room_of(module: str) -> str | None:
    """The room a ``kvproof.*`` module belongs to (None: not kvproof's)."""
    if not module.startswith("kvproof"):
        return None
    parts = module.split(".")[1:]
    if not parts or parts[0] not in LAYERS:
        return "kvproof"
    if (
        parts[0] == "stateful_tests"
        and len(parts) > 1
        and parts[1] in ("harness", "tree", "sequences", "deepinfer", "explore", "fuzz", "mutation")
    ):
        return f"stateful_tests.{parts[1]}"
    return parts[0]


def library_modules():
    for folder in (*LAYERS, "kvproof"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name.startswith("test_") or path.name == "conftest.py" or "tests" in path.relative_to(ROOT).parts:
                continue
            yield path


def is_kvproof_module(name: str) -> bool:
    """True for names of real modules or packages of kvproof (not names imported from them)."""
    parts = name.split(".")
    if parts[0] != "kvproof":
        return False
    folder = {"spec", "reference", "impl", "stateful_tests", "proofs"}
    rel = Path(*parts[1:]) if parts[1:] else Path()
    base = ROOT / rel if parts[1:2] and parts[1] in folder else ROOT / "kvproof" / rel
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


@pytest.mark.parametrize("path", list(library_modules()), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_room_imports_only_what_the_layout_allows(path):
    room = room_of(module_name(path))
    for name in imports_of(path):
        if not is_kvproof_module(name):
            continue
        target = room_of(name)
        if target in (room, None) or (room == "kvproof"):
            continue
        assert target in MAY_IMPORT[room], f"{path.relative_to(ROOT)} ({room}) imports {name} ({target})"
        if room == "impl" and target == "reference":
            assert name in REFERENCE_CORES_IN_IMPL, f"{path.name} imports {name}: impl may use only {REFERENCE_CORES_IN_IMPL}"


def test_the_layering_check_catches_a_forbidden_import(tmp_path, monkeypatch):
    """Negative control: a spec module importing the reference, and a harness module importing a family room."""
    assert room_of("kvproof.reference.radix_tree") not in MAY_IMPORT["spec"]
    assert room_of("kvproof.stateful_tests.tree.vectors") not in MAY_IMPORT["stateful_tests.harness"]
    assert room_of("kvproof.cli") not in MAY_IMPORT["stateful_tests.tree"]
    bad = ROOT / "spec" / "coverage.py"
    monkeypatch.setattr(
        Path,
        "read_text",
        lambda self, *a, **k: "from ..reference import RadixTree\n" if self == bad else Path.read_bytes(self).decode(),
    )
    with pytest.raises(AssertionError, match=r"imports kvproof\.reference"):
        test_each_room_imports_only_what_the_layout_allows(bad)


def test_spec_imports_nothing_from_the_other_layers():
    for path in (ROOT / "spec").glob("*.py"):
        for name in imports_of(path):
            assert room_of(name) in (None, "spec"), f"{path.name} imports {name}"


def test_only_impl_sync_imports_threading():
    for path in (ROOT / "impl").glob("*.py"):
        if path.name == "_sync.py":
            continue
        assert not {"threading", "_thread", "concurrent.futures", "queue"} & imports_of(path), f"{path.name} imports threading"


def test_pyproject_lists_every_package_folder():
    """Every folder with an ``__init__.py`` is in pyproject's package list, so a wheel equals the editable install."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {module_name(init) for folder in (*LAYERS, "kvproof") for init in (ROOT / folder).rglob("__init__.py")}
    assert found == listed, f"missing from pyproject: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"
    for package, folder in config["package-dir"].items():
        assert (ROOT / folder / "__init__.py").exists() and module_name(ROOT / folder / "__init__.py") == package


@pytest.mark.parametrize("layer", ["spec", "reference", "impl", "proofs", "stateful_tests"])
def test_a_layer_cannot_be_imported_by_its_folder_name(layer):
    """From the repository root, ``import spec`` would load a second copy of every class: the guard refuses it."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", f"import {layer}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and f"import kvproof.{layer}, not {layer}" in proc.stderr, proc.stderr[-500:]
    ok = subprocess.run([sys.executable, "-c", f"import kvproof.{layer}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr[-500:]
