"""kvproof bench memory and kvproof soak: exit codes, the promised lines, the JSON."""

import json

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE

SHORT_SOAK = ("--epochs", "6", "--epoch-s", "30", "--capacity", "50", "--untraced")


def test_bench_memory_reports_both_measures_side_by_side(tmp_path, kvproof_cli):
    """A smoke run of the benchmark's code path (synthetic traffic, two trees); nothing about size is asserted."""
    out = tmp_path / "memory.json"
    ran = kvproof_cli(
        "bench", "memory", "--requests", "120", "--synthetic", "--tree", "reference", "--tree", "dynamo", "--json", str(out)
    )
    body = json.loads(out.read_text())
    assert ran.code == EXIT_PASS and body["schema"] == "kvproof.bench-memory/1"
    assert ran.out.startswith("workload: synthetic chat traffic, 120 requests")
    assert "bytes/block (tracemalloc)" in ran.out and "bytes/block (RSS)" in ran.out
    reference = next(r for r in body["rows"] if r["name"] == "reference")
    assert reference["traced_per_block"] > 0 and reference["rss_per_block"] is not None and body["pairs"] > 0
    dynamo = next(r for r in body["rows"] if r["name"] == "dynamo")
    assert dynamo["traced_per_block"] is None  # Rust: RSS only (or skipped, with its reason, where it is not installed)


def test_bench_memory_refuses_an_unknown_tree(kvproof_cli):
    assert kvproof_cli("bench", "memory", "--tree", "nosuch").code == EXIT_USAGE


def test_soak_prints_a_line_per_epoch_and_exits_1_on_a_leaking_twin(tmp_path, kvproof_cli):
    out = tmp_path / "soak.json"
    ran = kvproof_cli("soak", "--target", "KeepsLookupEntries", *SHORT_SOAK, "--json", str(out))
    body = json.loads(out.read_text())
    assert ran.code == EXIT_FAIL and body["schema"] == "kvproof.soak/1" and len(body["samples"]) == 6
    assert sum(line.startswith("epoch ") for line in ran.out.splitlines()) == 6
    assert "BROKEN lookup entries <= live pairs" in ran.out and "GROWTH" in ran.last


def test_soak_passes_the_reference_and_tolerates_only_dead_nodes_kept_by_design_when_asked(kvproof_cli):
    """The reference shows no growth; a tree that keeps dead leaves exits 1 by default and 0 with
    --tolerate-dead-nodes; a leaking twin still fails with it."""
    clean = kvproof_cli("soak", "--target", "reference", *SHORT_SOAK)
    assert clean.code == EXIT_PASS and "growth=none" in clean.last
    strict = kvproof_cli("soak", "--target", "KeepsDeadLeaves", *SHORT_SOAK)
    assert strict.code == EXIT_FAIL and "known: every growth above is dead nodes kept" in strict.out
    assert kvproof_cli("soak", "--target", "KeepsDeadLeaves", *SHORT_SOAK, "--tolerate-dead-nodes").code == EXIT_PASS
    assert kvproof_cli("soak", "--target", "KeepsRemovedWorkers", *SHORT_SOAK, "--tolerate-dead-nodes").code == EXIT_FAIL


def test_soak_refuses_an_unknown_target(kvproof_cli):
    ran = kvproof_cli("soak", "--target", "nosuch")
    assert ran.code == EXIT_USAGE and "KeepsLookupEntries" in ran.out


def test_soak_of_the_slot_trackers_passes_and_catches_a_leaking_twin(kvproof_cli):
    short = ("--family", "sequences", "--epochs", "6", "--epoch-s", "240", "--untraced")
    ran = kvproof_cli("soak", *short, "--target", "impl")
    assert (
        ran.code == EXIT_PASS and ran.last.startswith("soak: family=sequences target=impl epochs=6") and "growth=none" in ran.last
    )
    leaky = kvproof_cli("soak", *short, "--target", "NeverExpires")
    assert leaky.code == EXIT_FAIL and "BROKEN request records <= booked requests" in leaky.out


def test_bench_memory_of_the_slot_trackers(tmp_path, kvproof_cli):
    out = tmp_path / "trackers.json"
    ran = kvproof_cli("bench", "memory", "--family", "sequences", "--requests", "200", "--json", str(out))
    body = json.loads(out.read_text())
    assert ran.code == EXIT_PASS and body["schema"] == "kvproof.bench-memory-sequences/1"
    assert ran.out.startswith("workload: 200 active requests") and [r["name"] for r in body["rows"]] == ["reference", "impl"]
    assert all(r["traced_per_block"] > 0 for r in body["rows"])


def test_soak_serves_a_mooncake_trace_looped_with_fresh_ids(tmp_path, kvproof_cli):
    """--trace replays the shipped slice (330 s) again and again, so a 40-minute soak meets new blocks in every epoch;
    a bad trace is a usage error naming the line."""
    from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE

    out = tmp_path / "soak.json"
    ran = kvproof_cli(
        "soak",
        "--target",
        "reference",
        "--epochs",
        "6",
        "--epoch-s",
        "400",
        "--capacity",
        "50",
        "--untraced",
        "--trace",
        str(SHIPPED_TRACE),
        "--json",
        str(out),
    )
    assert ran.code == EXIT_PASS, ran.out
    assert "traffic: " in ran.out and "(1000 requests), replayed every 331 s" in ran.out
    requests = [s["requests"] for s in json.loads(out.read_text())["samples"]]
    assert requests == sorted(set(requests)) and requests[-1] > 1000
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    refused = kvproof_cli("soak", "--trace", str(bad), *SHORT_SOAK)
    assert refused.code == EXIT_USAGE and "line 1: missing timestamp and hash_ids" in refused.out


def test_bench_trees_leads_with_the_trace_and_labels_the_synthetic_row(tmp_path, kvproof_cli):
    """A smoke run of the benchmark's code path (the shipped trace slice, tiny sizes); nothing about speed is asserted."""
    from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE

    out = tmp_path / "bench.json"
    ran = kvproof_cli(
        "bench",
        "trees",
        "--trace",
        str(SHIPPED_TRACE),
        "--requests",
        "40",
        "--streams",
        "2",
        "--repeats",
        "1",
        "--json",
        str(out),
    )
    assert ran.code == EXIT_PASS, ran.out
    first, second = ran.out.split("\n\n")[:2]
    assert first.startswith("workload 1 (trace; the representative one): mooncake_conversation_1k.jsonl, 40 requests")
    assert second.startswith("workload 2 (synthetic; a regression row, not traffic): 2 generated streams")
    assert "bytes/block (RSS)" in first and "goal (<= 1.5x the binding's bytes/block" in first
    assert "event CPU us" in first and "ratio reference / dynamo: events by CPU" in first
    assert "decoding (every tree's front door)" in first
    body = json.loads(out.read_text())
    assert body["schema"] == "kvproof.bench-trees/1"
    trace, synthetic = body["workloads"]
    names = [r["name"] for r in trace["rows"]]
    assert names == ["reference", "impl (1 lane)", "impl (3 lanes)", "pool x1", "pool x4", "dynamo"]
    reference = trace["rows"][0]
    assert reference["events_per_s"] > 0 and reference["finds_per_s"] > 0 and reference["rss_per_block"] is not None
    assert reference["event_cpu_us"] > 0 and reference["find_cpu_us"] > 0 and reference["event_cpu_us_to_dynamo"] > 0
    assert trace["events"] > 40 and trace["queries"] == 40 and synthetic["workload"] == "synthetic"
    assert trace["decode_us"]["fast"] > 0 and trace["decode_us"]["strict"] > 0
    assert all(r["rss_per_block"] is None for r in synthetic["rows"])  # no holdings known: no memory column


def test_bench_trees_refuses_a_missing_trace_and_bad_counts(kvproof_cli):
    assert kvproof_cli("bench", "trees", "--trace", "/nonexistent/trace.jsonl").code == EXIT_USAGE
    assert kvproof_cli("bench", "trees", "--workers", "0").code == EXIT_USAGE
    assert kvproof_cli("bench", "trees", "--requests", "0").code == EXIT_USAGE


def test_bench_shards_runs_each_campaign_serial_and_split_and_they_count_alike(tmp_path, kvproof_cli):
    """A smoke run (tiny campaigns); the speed-up is printed, never asserted."""
    out = tmp_path / "shards.json"
    ran = kvproof_cli("bench", "shards", "--streams", "6", "--inputs", "10", "--suite", "", "--json", str(out))
    assert ran.code == EXIT_PASS, ran.out
    body = json.loads(out.read_text())
    assert [r["campaign"] for r in body["rows"]] == ["conform tree", "fuzz"]
    assert all(r["same_counts"] and r["serial_s"] > 0 and r["parallel_s"] > 0 for r in body["rows"])
    wrong = kvproof_cli("bench", "shards", "--streams", "6", "--inputs", "10", "--suite", "no/such/tests")
    assert wrong.code == EXIT_USAGE and "not a test folder of the checkout" in wrong.out and "Traceback" not in wrong.out
