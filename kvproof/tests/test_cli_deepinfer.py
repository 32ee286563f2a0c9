"""kvproof roundtrip / bench roundtrip / deepinfer-labs, and the deepinfer rows of kvproof check."""

import json

from kvproof.report import EXIT_PASS, EXIT_SKIPPED
from kvproof.stateful_tests.deepinfer.backends import backend
from kvproof.stateful_tests.deepinfer.roundtrip_laws import LAWS


def test_roundtrip_numpy_prints_every_law_and_passes(tmp_path, kvproof_cli):
    out = tmp_path / "rt.json"
    ran = kvproof_cli("roundtrip", "--backend", "numpy", "--count", "20", "--json", str(out))
    assert ran.code == EXIT_PASS
    lines = ran.out.splitlines()
    assert all(any(line.split()[:1] == [law.name] and law.title in line for line in lines) for law in LAWS)
    assert ran.last.startswith(f"kvproof roundtrip: {len(LAWS)} laws passed, 0 failed")
    assert {row["result"] for row in json.loads(out.read_text())["laws"]} == {"pass"}


def test_unavailable_backend_is_a_visible_skip_and_not_a_pass(kvproof_cli):
    for name in ("cuda", "cupy"):
        if backend(name).available:
            continue
        ran = kvproof_cli("roundtrip", "--backend", name)
        assert ran.code == EXIT_SKIPPED
        assert "SKIP" in ran.out and backend(name).reason in ran.out and "not a pass" in ran.out
        assert kvproof_cli("roundtrip", "--backend", name, "--allow-skip").code == EXIT_PASS


def test_replay_one_case(kvproof_cli):
    ran = kvproof_cli("roundtrip", "--backend", "numpy", "--case", "0")
    assert ran.code == EXIT_PASS and "cases=1 (case 0 only)" in ran.out


def test_controls_print_catch_rates(kvproof_cli):
    ran = kvproof_cli("roundtrip", "--backend", "numpy", "--count", "30", "--controls", "--allow-skip")
    assert ran.code == EXIT_PASS
    assert "SharedOffByOne" in ran.out and "trap: a consistent off-by-one" in ran.out and "FAIL" not in ran.out


def test_labs_reproduce_the_book(kvproof_cli):
    ran = kvproof_cli("deepinfer-labs")
    assert ran.code == EXIT_PASS
    assert "Checks: 69666 cases; bounds, alignment, backoff, monotonicity" in ran.out and "DIFFERS" not in ran.out


def test_bench_runs_side_by_side_and_writes_json(tmp_path, kvproof_cli):
    """A smoke run of the benchmark's code path: tiny sizes; nothing about speed is asserted."""
    out = tmp_path / "bench.json"
    ran = kvproof_cli(
        "bench",
        "roundtrip",
        "--backend",
        "numpy",
        "--backend",
        "torch",
        "--backend",
        "cuda",
        "--repeats",
        "2",
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
    )
    assert ran.code == EXIT_PASS
    body = json.loads(out.read_text())
    assert body["schema"] == "kvproof.bench-roundtrip/1"
    rows = body["rows"]
    numpy_ops = {r["operation"] for r in rows if r["backend"] == "numpy"}
    assert numpy_ops == {
        "select ring-view stored",
        "select ring-view handoff",
        "load ring-view",
        "select raw-prefix",
        "load raw-prefix",
    }
    assert all(r["ratio"] is not None and r["ratio"] > 0 for r in rows if r["op_gbps"] is not None)
    assert all(r["note"].startswith("SKIP: ") for r in rows if r["op_gbps"] is None)
    assert "ratio" in ran.out


def test_bench_roundtrip_takes_its_repeats(tmp_path, kvproof_cli):
    """``--repeats N`` reaches the benchmark (argparse's nested subparsers once reset it to 41)."""
    out = tmp_path / "bench.json"
    ran = kvproof_cli(
        "bench",
        "roundtrip",
        "--backend",
        "numpy",
        "--repeats",
        "5",
        "--warmup",
        "0",
        "--row-bytes",
        "8",
        "--stored-layers",
        "1",
        "--dropped-layers",
        "1",
        "--json",
        str(out),
    )
    assert ran.code == EXIT_PASS and "--repeats 5 " in ran.out
    assert {r["repeats"] for r in json.loads(out.read_text())["rows"]} == {5}


def test_gate_rows(kvproof_cli):
    ran = kvproof_cli("check", "--only", "deepinfer", "--allow-skip")
    assert ran.code == EXIT_PASS
    assert "golden numbers (ch. 11 labs)" in ran.out and "negative controls and traps" in ran.out
