"""harness/files.py: a replay file is written whole, or not at all (no half file, no temporary left behind)."""

import json

import pytest

from kvproof.stateful_tests.harness.files import write_json_atomically


def test_a_file_is_written_whole_into_a_folder_made_for_it(tmp_path):
    path = write_json_atomically(tmp_path / "deep" / "case.json", {"format": "x", "n": 1})
    assert json.loads(path.read_text()) == {"format": "x", "n": 1} and path.read_text().endswith("\n")


def test_a_write_that_fails_leaves_neither_the_file_nor_a_temporary(tmp_path):
    with pytest.raises(TypeError):
        write_json_atomically(tmp_path / "case.json", {"unwritable": object()})
    assert list(tmp_path.iterdir()) == []
