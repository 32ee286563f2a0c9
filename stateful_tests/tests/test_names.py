"""Names that mean one thing: no two classes in the project's rooms share a name.

The law: a class name says its room, so that a reader (and a gate row, a CLI message, a saved
schedule) never has to ask which of two ``ExtendsInternalNode`` is meant. ``duplicate_class_names``
reads the rooms' sources (spec, reference, impl, proofs, stateful_tests, kvproof; tests included),
and the test fails on any class name defined twice; its negative control shows a shared name reported.

Source: docs/sources.md#kvproof-design-card (the review of 2026-12-05, section 2.4 "Name collisions").
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ROOMS = ("spec", "reference", "impl", "proofs", "stateful_tests", "kvproof")


def duplicate_class_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """Class names defined more than once across ``sources`` (path -> text), each with its ``path:line`` places."""
    places: dict[str, list[str]] = defaultdict(list)
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text, filename=path)):
            if isinstance(node, ast.ClassDef):
                places[node.name].append(f"{path}:{node.lineno}")
    return {name: where for name, where in sorted(places.items()) if len(where) > 1}


def project_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for room in ROOMS for p in sorted((ROOT / room).rglob("*.py"))}


def test_no_two_classes_in_the_project_share_a_name():
    duplicates = duplicate_class_names(project_sources())
    assert not duplicates, f"class names defined more than once (rename each to say its room): {duplicates}"


def test_negative_control_two_modules_sharing_a_class_name_are_reported():
    sources = {
        "a/tree.py": "class Scenario:\n    pass\n",
        "b/campaign.py": "x = 1\n\n\nclass Scenario:\n    pass\n",
        "c/other.py": "class ExploreScenario:\n    pass\n",
    }
    assert duplicate_class_names(sources) == {"Scenario": ["a/tree.py:1", "b/campaign.py:4"]}
