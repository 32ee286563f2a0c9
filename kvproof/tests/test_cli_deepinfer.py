"""kvproof roundtrip / bench-roundtrip / deepinfer-labs, and the deepinfer rows of kvproof check."""

import argparse
import json

from kvproof.cli import main
from kvproof.cli_deepinfer import bench_roundtrip_main
from kvproof.stateful_tests.deepinfer.backends import backend
from kvproof.stateful_tests.deepinfer.roundtrip_laws import LAWS


def test_roundtrip_numpy_prints_every_law_and_passes(tmp_path, capsys):
    out = tmp_path / "rt.json"
    assert main(["roundtrip", "--backend", "numpy", "--count", "20", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(f"{law.name}   {law.title}" in text for law in LAWS)
    assert text.strip().splitlines()[-1].startswith(f"kvproof roundtrip: {len(LAWS)} laws passed, 0 failed")
    assert {row["result"] for row in json.loads(out.read_text())["laws"]} == {"pass"}


def test_unavailable_backend_is_a_visible_skip_and_not_a_pass(capsys):
    for name in ("cuda", "cupy"):
        if backend(name).available:
            continue
        assert main(["roundtrip", "--backend", name]) == 1
        text = capsys.readouterr().out
        assert "SKIP" in text and backend(name).reason in text and "not a pass" in text
        assert main(["roundtrip", "--backend", name, "--allow-skip"]) == 0
        capsys.readouterr()


def test_replay_one_case(capsys):
    assert main(["roundtrip", "--backend", "numpy", "--case", "0"]) == 0
    assert "cases=1 (case 0 only)" in capsys.readouterr().out


def test_controls_print_catch_rates(capsys):
    assert main(["roundtrip", "--backend", "numpy", "--count", "30", "--controls", "--allow-skip"]) == 0
    text = capsys.readouterr().out
    assert "SharedOffByOne" in text and "trap: a consistent off-by-one" in text and "FAIL" not in text


def test_labs_reproduce_the_book(capsys):
    assert main(["deepinfer-labs"]) == 0
    text = capsys.readouterr().out
    assert "Checks: 69666 cases; bounds, alignment, backoff, monotonicity" in text and "DIFFERS" not in text


def test_bench_runs_side_by_side_and_writes_json(tmp_path, capsys):
    """A smoke run of the benchmark's code path: tiny sizes, one repeat; nothing about speed is asserted."""
    out = tmp_path / "bench.json"
    assert (
        main(
            [
                "bench-roundtrip",
                "--backends",
                "numpy,torch,cuda",
                "--repeats",
                "1",
                "--warmup",
                "0",
                "--row-bytes",
                "8",
                "--stored-layers",
                "2",
                "--dropped-layers",
                "1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["rows"]
    numpy_ops = {r["operation"] for r in rows if r["backend"] == "numpy"}
    assert numpy_ops == {
        "select ring-view stored",
        "select ring-view handoff",
        "load ring-view",
        "select raw-prefix",
        "load raw-prefix",
    }
    assert all(r["ratio"] is not None and r["ratio"] > 0 for r in rows if r["op_gbps"] is not None)
    skipped = [r for r in rows if r["op_gbps"] is None]
    assert all(r["note"].startswith("SKIP: ") for r in skipped)
    assert "ratio" in capsys.readouterr().out


def test_bench_entry_point_takes_a_foreign_namespace(capsys):
    """``kvproof bench roundtrip`` can call bench_roundtrip_main with its own namespace; absent options default."""
    args = argparse.Namespace(backends="numpy", repeats=1, warmup=0, row_bytes=8, stored_layers=1, dropped_layers=1)
    assert bench_roundtrip_main(args) == 0
    assert "numpy   select raw-prefix" in capsys.readouterr().out


def test_gate_rows(capsys):
    assert main(["check", "--only", "deepinfer", "--allow-skip"]) == 0
    text = capsys.readouterr().out
    assert "golden numbers (ch. 11 labs)" in text and "negative controls and traps" in text
