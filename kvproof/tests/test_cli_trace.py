"""kvproof trace: the summary, the verdicts, the last line, the exit codes, the plot and the JSON."""

import json

import pytest

from kvproof.report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE
from kvproof.stateful_tests.tree.traffic import SHIPPED_TRACE

SMALL = ("--trace", str(SHIPPED_TRACE), "--workers", "2", "--capacity", "100", "--requests", "150")


def test_trace_prints_the_summary_and_every_verdict_and_exits_0(tmp_path, kvproof_cli):
    out = tmp_path / "trace.json"
    ran = kvproof_cli("trace", *SMALL, "--tree", "reference", "--tree", "impl", "--tree", "impl-lanes", "--json", str(out))
    assert ran.code == EXIT_PASS, ran.out
    assert "requests 150; events: stored" in ran.out and "hit rate" in ran.out and "peak active" in ran.out
    assert "reference (oracle)" in ran.out and "impl-lanes" in ran.out and "spec" in ran.out
    assert ran.last.startswith("trace: requests=150 events=") and "queries=900 mismatches=0 overcredits=0" in ran.last
    body = json.loads(out.read_text())
    assert body["schema"] == "kvproof.trace/1" and body["requests"] == 150 and len(body["per_rank"]) == 2
    assert {t["name"] for t in body["trackers"]} == {"spec", "reference", "impl"}


def test_trace_exits_1_on_a_broken_tree_and_names_the_over_credit(kvproof_cli):
    ran = kvproof_cli(
        "trace",
        *SMALL[:-1],
        "300",
        "--tree",
        "reference",
        "--tree",
        "kvproof.stateful_tests.tree.mutants:IgnoresRemovalBatches",
        "--no-trackers",
    )
    assert ran.code == EXIT_FAIL and "over-credits" in ran.out and "overcredits=0" not in ran.last


def test_trace_exits_1_on_a_broken_tracker(kvproof_cli):
    ran = kvproof_cli("trace", *SMALL, "--no-trees", "--tracker", "reference", "--tracker", "NoSpillover")
    assert ran.code == EXIT_FAIL and "mismatches=0" not in ran.last


def test_a_bad_trace_file_is_a_usage_error_naming_the_line(tmp_path, kvproof_cli):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "hash_ids": [0]}\n{"timestamp": 1, "hash_ids": "x"}\n')
    ran = kvproof_cli("trace", "--trace", str(bad))
    assert ran.code == EXIT_USAGE and f"{bad}: line 2: hash_ids must be a list" in ran.out and "Traceback" not in ran.out


def test_the_plot_is_written_or_skipped_with_the_reason(tmp_path, kvproof_cli):
    image = tmp_path / "load.png"
    ran = kvproof_cli("trace", *SMALL, "--tree", "reference", "--no-trackers", "--plot", str(image))
    assert ran.code == EXIT_PASS
    assert (image.is_file() and f"wrote {image}" in ran.out) or "plot skipped: matplotlib is not installed" in ran.out


def test_without_matplotlib_the_plot_is_skipped_not_a_crash(tmp_path, monkeypatch):
    import builtins

    from kvproof.plot import plot_load

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    why = plot_load([(0.0, (1, 0), 1)], tmp_path / "x.png")
    assert "matplotlib is not installed" in why and not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("args", [("--oracle", "dynamo-nope"), ("--policy", "tree", "--no-trees"), ("--tracker", "NoSuchTwin")])
def test_inconsistent_options_are_usage_errors(args, kvproof_cli):
    assert kvproof_cli("trace", *SMALL, *args).code == EXIT_USAGE


def test_binned_means_weigh_each_step_by_its_time() -> None:
    """A step of 2 from 0 to 1 s and 0 after, over [0, 4] in 2 slices: slice 1 averages 1, slice 2 is 0;
    a step crossing a slice edge is split between the slices."""
    from kvproof.plot import binned_means, step_series

    assert binned_means([0.0, 1.0], [2, 0], 4.0, 2) == [1.0, 0.0]
    assert binned_means([0.0, 1.0, 3.0], [0, 4, 0], 4.0, 2) == [2.0, 2.0]
    assert step_series([(1.0, (1, 0), 2), (3.0, (1, 0), 0)]) == {(1, 0): ([0.0, 1.0, 3.0], [0, 2, 0])}


def test_binned_means_keep_the_integral_on_awkward_slice_edges() -> None:
    """Steps whose ends fall on (floating) slice edges: every second of load is counted once, and the loop ends."""
    from kvproof.plot import binned_means

    xs = [i * 0.1 for i in range(60)]
    ys = [i % 7 for i in range(60)]
    end, bins = 5.9, 59
    integral = sum(y * ((xs[i + 1] if i + 1 < len(xs) else end) - xs[i]) for i, y in enumerate(ys))
    assert abs(sum(binned_means(xs, ys, end, bins)) * end / bins - integral) < 1e-9


@pytest.mark.dynamo
def test_the_real_slot_tracker_is_a_tracker_row(kvproof_cli, slot_tracker_oracle):
    ran = kvproof_cli(
        "trace", *SMALL[:-1], "60", "--no-trees", "--tracker", "reference", "--stress-writers", "0", "--real-tracker", "20"
    )
    assert ran.code == EXIT_PASS, ran.out
    assert "dynamo.slot_tracker (x20)" in ran.out and ran.last.startswith("trace: requests=60 ")


def test_without_the_real_slot_tracker_its_row_is_skipped_with_the_reason(kvproof_cli, monkeypatch):
    from kvproof.stateful_tests.sequences import oracle

    monkeypatch.setattr(oracle, "oracle_unavailable", lambda: "needs dynamo.slot_tracker")
    ran = kvproof_cli("trace", *SMALL[:-1], "20", "--tree", "reference", "--real-tracker", "20")
    assert ran.code == EXIT_PASS and "real slot tracker skipped: needs dynamo.slot_tracker" in ran.out
