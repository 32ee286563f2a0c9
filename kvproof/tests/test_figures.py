"""docs/figures.md is generated from docs/figures.json, and every figure names its command and date."""

import json

import pytest

from kvproof import figures


def test_every_figure_names_its_command_and_date():
    entries = figures.load()
    assert entries
    assert {e["what"]: figures.check_entry(e) for e in entries if figures.check_entry(e)} == {}
    assert len({e["what"] for e in entries}) == len(entries), "one entry per figure"


def test_the_mutation_figures_are_what_the_verdicts_of_record_give():
    from kvproof.stateful_tests.mutation.verdicts import reports_of_record

    layers = {layer: report.to_json()["layers"] for layer, report in reports_of_record().items()}
    from_reports = [e for e in figures.load() if "report" in e]
    assert len(from_reports) == 3
    for entry in from_reports:
        (layer,) = entry["report"]["layers"]
        assert [layer] == [{k: v for k, v in got.items() if k in layer} for got in layers[layer["name"]]]


def test_the_checks_catch_a_stale_page_and_an_undated_figure():
    """Negative controls: a changed input no longer renders the committed page; entries without a date, a
    command, or with both a result and a report are named; a report of an unknown schema is refused."""
    entries = figures.load()
    changed = [dict(entries[0], result="changed"), *entries[1:]]
    assert figures.render(changed) != figures.PAGE.read_text()
    assert figures.check_entry({"what": "x", "command": "kvproof x", "date": "yesterday", "result": "r"})
    assert figures.check_entry({"what": "x", "command": "", "date": "2026-12-06", "result": "r"})
    assert figures.check_entry({"what": "x", "command": "c", "date": "2026-12-06", "result": "r", "report": {}})
    with pytest.raises(ValueError):
        figures.record(entries, "x", "2026-12-06", "kvproof check", {"schema": "kvproof.gate/1"})


def test_recording_a_figure_replaces_its_entry_in_place(tmp_path):
    report = {
        "schema": "kvproof.mutate/1",
        "passed": True,
        "median_ttd_s": 0.1,
        "p90_ttd_s": 1.0,
        "layers": [
            {
                "name": "spec",
                "total": 2,
                "killed": 2,
                "timeout": 0,
                "survived": 0,
                "equivalent": 0,
                "no_tests": 0,
                "score": 1.0,
                "other": 0,
            }
        ],
    }
    entries = [
        {"what": "a", "command": "c", "date": "2026-12-01", "result": "r"},
        {"what": "b", "command": "c", "date": "2026-12-01", "result": "r"},
    ]
    after = figures.record(entries, "a", "2026-12-06", "kvproof mutate --merge m.json", report)
    assert [e["what"] for e in after] == ["a", "b"] and "spec/ **100.0%**" in figures.result_of(after[0])
    path = tmp_path / "figures.json"
    figures.dump(after, path)
    assert figures.load(path) == after and len(path.read_text().splitlines()) == len(after) + 2
    assert json.loads(path.read_text()) == after
