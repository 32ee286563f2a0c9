"""The README: short, its set-up commands the ones CI runs, and every count it states held against the code."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
MAX_LINES = 150


def setup_commands(readme: str) -> list[str]:
    """The README's fenced bash blocks of the set-up section, one command each."""
    section = readme.split("## Install, gate and tests", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def ci_commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.startswith("python3 -m venv")]


def counts(readme: str) -> dict[str, int]:
    """The counts the README's prose states, by what they count."""
    found = {
        "gate rows": re.search(r"The gate has (\d+) rows", readme),
        "families": re.search(r"rows in (\w+) families", readme),
        "vectors": re.search(r"(\d+) named vectors", readme),
        "broken concurrent structures": re.search(r"each of the (\d+) broken concurrent\s+structures", readme),
    }
    words = {"four": 4, "five": 5, "three": 3}
    out = {}
    for what, match in found.items():
        assert match, f"the README no longer states its {what}: drop its line here too"
        out[what] = int(words.get(match.group(1), match.group(1)))
    return out


def code_counts() -> dict[str, int]:
    from kvproof.gate import FAMILIES, all_checks
    from kvproof.stateful_tests.explore.campaign import broken_subjects
    from kvproof.stateful_tests.tree.vectors import SCENARIOS

    return {
        "gate rows": len(all_checks()),
        "families": len(FAMILIES),
        "vectors": len(SCENARIOS),
        "broken concurrent structures": len(broken_subjects()),
    }


def test_the_readme_is_at_most_150_lines():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_the_readme_set_up_is_two_commands_and_ci_runs_exactly_them():
    readme = setup_commands(README.read_text())
    assert len(readme) == 2 and readme[0].endswith("kvproof check") and readme[1].endswith("python -m pytest -n auto")
    assert sorted(readme) == sorted(ci_commands(CI_RUN.read_text())), ".ci/run must run the README's set-up commands verbatim"


def test_every_count_the_readme_states_is_the_codes():
    assert counts(README.read_text()) == code_counts()


def test_the_checks_catch_a_changed_readme():
    """Negative controls: a changed command, a wrong count and a long README each fail their check."""
    text = README.read_text()
    changed = text.replace("pytest -n auto", "pytest -n 2", 1)
    assert sorted(setup_commands(changed)) != sorted(ci_commands(CI_RUN.read_text()))
    n = code_counts()["vectors"]
    assert counts(text.replace(f"{n} named vectors", f"{n - 1} named vectors"))["vectors"] != n
    assert len((text + "\n" * MAX_LINES).splitlines()) > MAX_LINES
    with pytest.raises(AssertionError, match="gate rows"):
        counts(text.replace("The gate has", "The gate holds"))
