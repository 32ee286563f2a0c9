"""Reviewed equivalent mutants: changes that no test can notice because they change no behaviour.

An equivalent mutant survives every test, and rightly: ``c >= n`` and ``c > n`` agree when both
branches give ``n`` at ``c == n``. It is set aside from a module's score only when it is listed,
with a reason, in the reviewed file ``stateful_tests/mutation/equivalents.toml``::

    [[equivalent]]
    mutant = "kvproof.spec.coverage.x_raised_cutoff__mutmut_7"
    function_hash = "3f0c9a1b2d4e"
    reason = "c >= n and c > n agree: at c == n both branches return n"

The entry also carries the hash of the mutated function's code (``function_hash``: its syntax tree
with the docstring left out, so that a docstring, comment or layout edit is not a code change): once the
function's code is edited the hash no longer matches, the entry is *stale*, and the survivor counts
against the score again until someone reviews it anew. mutmut numbers a function's mutants in
the order it generates them, so an edited function can renumber them; the hash catches that too.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...spec.errors import KvProofError

EQUIVALENTS_FILE = "stateful_tests/mutation/equivalents.toml"
CLASS_SEPARATOR = "ǁ"  # mutmut's marker around a class name in a method's mangled name


class EquivalentsError(KvProofError, ValueError):
    """A malformed equivalents file: an entry without a mutant, a hash or a reason."""


@dataclass(frozen=True)
class MutantName:
    """A mutant's name taken apart: ``kvproof.spec.coverage.xǁEdgeStateǁ__repr____mutmut_2``."""

    module: str  # kvproof.spec.coverage
    cls: str | None  # EdgeState
    function: str  # __repr__
    number: int  # 2

    @classmethod
    def parse(cls, name: str) -> MutantName:
        mangled, marker, number = name.partition("__mutmut_")
        module, _, local = mangled.rpartition(".")
        if not marker or not module or not number.isdigit():
            raise EquivalentsError(f"not a mutmut mutant name: {name!r}")
        if CLASS_SEPARATOR in local:
            _, class_name, function = local.split(CLASS_SEPARATOR, 2)
            return cls(module, class_name, function, int(number))
        if not local.startswith("x_"):
            raise EquivalentsError(f"not a mutmut mutant name: {name!r}")
        return cls(module, None, local[2:], int(number))

    @property
    def qualname(self) -> str:
        return f"{self.cls}.{self.function}" if self.cls else self.function

    def source_path(self, root: Path) -> Path:
        """The checkout's file of the module: ``kvproof.spec.coverage`` -> ``root/spec/coverage.py``."""
        parts = self.module.split(".")[1:]
        return root.joinpath(*parts).with_suffix(".py")


def _function_node(tree: ast.Module, cls: str | None, function: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    body: Iterable[ast.stmt] = tree.body
    if cls is not None:
        owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if owner is None:
            return None
        body = owner.body
    return next((n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function), None)


def function_source(source: str, cls: str | None, function: str) -> str | None:
    """The source text of a top-level function, or of a method of a top-level class (None: not there)."""
    node = _function_node(ast.parse(source), cls, function)
    return None if node is None else ast.get_source_segment(source, node)


def function_code(source: str, cls: str | None, function: str) -> str | None:
    """The function's code as Python parses it, its docstring left out: ``ast.dump`` of its node, without positions.

    The law: a code change changes the text, and an edit of the docstring, a comment or the layout (``ruff format``,
    a rewrapped line) does not. A docstring is the first statement when it is a string constant; a function that is
    nothing but a docstring has an empty body here.
    """
    node = _function_node(ast.parse(source), cls, function)
    if node is None:
        return None
    if ast.get_docstring(node, clean=False) is not None:
        node = copy.copy(node)
        node.body = node.body[1:]
    return ast.dump(node, include_attributes=False)


def function_hash(root: Path, mutant: str) -> str | None:
    """The hash of the code of the function ``mutant`` changes, as the checkout at ``root`` has it now.

    The law: the hash changes with every edit of the function's code and with no edit of its
    docstring, comments or layout. It is the first 12 hex digits of sha256 over ``function_code``
    (the function's syntax tree, docstring left out), so rewording a docstring or reformatting the
    file leaves a reviewed equivalent and a carried verdict current, while any change to what the
    function does turns them stale.
    """
    name = MutantName.parse(mutant)
    path = name.source_path(root)
    if not path.is_file():
        return None
    text = function_code(path.read_text(), name.cls, name.function)
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Equivalent:
    """One reviewed entry of the equivalents file."""

    mutant: str
    function_hash: str
    reason: str


def parse_equivalents(text: str) -> list[Equivalent]:
    """The entries of an equivalents file's text (``[[equivalent]]`` tables)."""
    entries = []
    for i, raw in enumerate(tomllib.loads(text).get("equivalent", [])):
        missing = [k for k in ("mutant", "function_hash", "reason") if not str(raw.get(k, "")).strip()]
        if missing:
            raise EquivalentsError(
                f"equivalent entry {i + 1} lacks {', '.join(missing)}: every entry needs a mutant, "
                "the function's hash and a reason"
            )
        MutantName.parse(raw["mutant"])
        entries.append(Equivalent(raw["mutant"], raw["function_hash"], raw["reason"].strip()))
    return entries


def load_equivalents(root: Path, path: Path | None = None) -> list[Equivalent]:
    """The checkout's reviewed entries (none when the file is absent)."""
    file = path or root / EQUIVALENTS_FILE
    return parse_equivalents(file.read_text()) if file.is_file() else []


def split_equivalents(
    entries: Iterable[Equivalent], hashes: dict[str, str | None]
) -> tuple[dict[str, Equivalent], list[Equivalent]]:
    """Entries that hold (their hash is the function's current hash) by mutant name, and the stale ones.

    ``hashes`` maps a mutant name to its function's current hash; an entry for a mutant not in it
    (not part of this run) is neither: it is simply not consulted.
    """
    valid: dict[str, Equivalent] = {}
    stale: list[Equivalent] = []
    for entry in entries:
        if entry.mutant not in hashes:
            continue
        if hashes[entry.mutant] == entry.function_hash:
            valid[entry.mutant] = entry
        else:
            stale.append(entry)
    return valid, stale
