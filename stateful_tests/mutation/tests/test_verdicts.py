"""The verdicts of record (``docs/mutation-runs/*.jsonl.gz``): compact, traceable, and they reproduce docs/mutation.md."""

import gzip
import json
import re
import subprocess
from pathlib import Path

import pytest

from kvproof.stateful_tests.mutation import verdicts
from kvproof.stateful_tests.mutation.scores import MergeError, Mutant, Report, read_shard_run

ROOT = Path(__file__).resolve().parents[3]
MUTATION_MD = ROOT / "docs" / "mutation.md"
PROVENANCE = re.compile(
    r"^[0-9a-f]{40}:docs/mutation-runs/[\w.-]+\.(json|jsonl\.gz)$"
)  # a report, or an earlier verdict of record


def record_table(text: str) -> dict[str, tuple[str, ...]]:
    """docs/mutation.md's "The verdict of record" rows: layer -> (goal, score, mutants, survived, equivalents, gaps)."""
    section = text.split("### The verdict of record", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0].rstrip("/")] = tuple(cells[1:7])
    return rows


def record_row(report: Report, layer: str) -> tuple[str, ...]:
    """The same cells, computed from a layer's merged report."""
    (tally,) = [t for t in report.layers if t.name == layer]
    score = tally.score
    assert score is not None, f"{layer}/ has no judged mutant"
    return (
        f"{100 * report.goals[layer]:.0f}%",
        f"{100 * score:.1f}%",
        f"{tally.total:,}",
        str(tally["survived"]),
        str(tally["equivalent"]),
        str(tally["no tests"]),
    )


def test_the_verdicts_of_record_reproduce_the_table_of_docs_mutation_md():
    table = record_table(MUTATION_MD.read_text())
    reports = verdicts.reports_of_record(ROOT)
    assert sorted(table) == sorted(reports) == ["impl", "reference", "spec"]
    for layer, report in reports.items():
        assert record_row(report, layer) == table[layer], f"docs/mutation.md's {layer}/ row is not what its verdicts say"
        assert not report.failures(), report.failures()


def test_a_changed_verdict_no_longer_reproduces_the_table(tmp_path):
    """Negative control: one killed mutant of the reference's verdict turned survivor changes the layer's row."""
    table = record_table(MUTATION_MD.read_text())
    for path in verdicts.verdicts_of("reference", ROOT):
        body = verdicts.read_verdict(path)
        if path.name.startswith("reference-radix_tree"):
            killed = next(m for m in body["mutants"] if m["exit_code"] == 1)
            killed["exit_code"] = 0
        lines = [json.dumps({k: v for k, v in body.items() if k != "mutants"}), *map(json.dumps, body["mutants"])]
        verdicts.write_verdict(lines, tmp_path / verdicts.VERDICTS / path.name)
    for module in ("radix_tree.py", "sequences.py"):
        (tmp_path / "reference").mkdir(exist_ok=True)
        (tmp_path / "reference" / module).write_text("")
    changed = verdicts.reports_of_record(tmp_path)["reference"]
    assert record_row(changed, "reference") != table["reference"]


def test_each_verdict_names_its_group_and_the_commit_and_path_it_came_from():
    paths = sorted((ROOT / verdicts.VERDICTS).iterdir())
    assert paths and all(verdicts.is_verdict(p) for p in paths), "docs/mutation-runs/ holds only verdicts of record"
    for path in paths:
        header = verdicts.read_verdict(path)
        assert path.name == header["group"] + verdicts.SUFFIX == verdicts.group_of(header["paths"]) + verdicts.SUFFIX
        # A report committed once (before issue 34) is named <commit>:<path>; a later run's report is a CI artifact,
        # named by the path it was written to, and then every mutant carries its function's hash, which says
        # what code it judged (equivalents.function_hash).
        assert PROVENANCE.match(header["report"]) or (
            header["report"].startswith("/") and all(m.get("function_hash") for m in header["mutants"])
        ), header["report"]
        assert (
            header["rejudged_from"] is None
            or PROVENANCE.match(header["rejudged_from"])
            or header["rejudged_from"].startswith("/tmp/")
        )


def test_a_verdict_reads_back_as_the_report_it_was_recorded_from(tmp_path):
    mutants = [
        Mutant("kvproof.spec.coverage.x_f__mutmut_1", "spec/coverage.py", 1, 0.5, 0.01, "t.py::test_a", function_hash="h"),
        Mutant("kvproof.spec.coverage.x_f__mutmut_2", "spec/coverage.py", 0, 0.5, diff="- a\n+ b", function_hash="h"),
        Mutant("kvproof.spec.coverage.x_f__mutmut_3", "spec/coverage.py", 33, diff="- c\n+ d"),
    ]
    report = Report(mutants)
    body = {
        "schema": "kvproof.mutate/1",
        **report.to_json({"profile": "ci", "paths": ["spec/coverage.py"], "shard": "1/1", "seconds": 3.0}),
    }
    (tmp_path / "r.json").write_text(json.dumps(body))
    out = tmp_path / "spec-coverage.jsonl.gz"
    verdicts.write_verdict(verdicts.verdict_lines(body, "c0ffee:r.json", None), out)
    again = read_shard_run(out)
    assert (again.profile, again.layers, str(again.shard), again.seconds) == ("ci", ("spec/coverage.py",), "1/1", 3.0)
    assert again.report.to_json() == report.to_json()
    assert verdicts.read_verdict(out)["report"] == "c0ffee:r.json"
    first = out.read_bytes()
    verdicts.write_verdict(verdicts.verdict_lines(body, "c0ffee:r.json", None), out)
    assert out.read_bytes() == first, "the same verdict is the same bytes (no timestamp in the gzip header)"


def test_what_is_not_a_verdict_is_refused_by_name(tmp_path):
    """Negative controls: a gzip of other JSON lines, and bytes that are not gzip, are not verdicts."""
    other = tmp_path / "other.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"schema": "kvproof.gate/1"}\n'))
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    for path in (other, broken):
        with pytest.raises(MergeError, match=path.name):
            read_shard_run(path)


def test_a_group_is_named_by_its_modules_in_any_order_and_of_one_layer():
    assert verdicts.group_of(["spec"]) == "spec"
    assert (
        verdicts.group_of(["impl/node.py", "impl/_sync.py"])
        == verdicts.group_of(["impl/_sync.py", "impl/node.py"])
        == "impl-node-sync"
    )
    with pytest.raises(ValueError):
        verdicts.group_of(["impl/node.py", "spec/coverage.py"])


def test_run_output_is_ignored_by_git_and_the_verdicts_are_not():
    def ignored(path: str) -> bool:
        return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", path]).returncode == 0

    assert ignored("docs/mutation-runs/ci-spec-2026-12-06.json")
    assert not ignored("docs/mutation-runs/spec.jsonl.gz"), "negative control: a verdict of record is committed"
