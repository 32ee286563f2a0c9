"""The per-release wire-format table of the slot-tracker harness, and the ``rebooking`` replica rules.

Without the package these run on the table and the reference model alone. With
``KVPROOF_RELEASE_SITES`` pointing at a folder of extracted wheels (``<dir>/<version>/dynamo``),
one short conformance run per release checks that each is detected and driven (docs/slot-tracker-releases.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvproof.reference.sequences import SlotTracker
from kvproof.spec.primitives import WorkerWithDpRank
from kvproof.spec.sequence_inputs import PrefillLoadHint, SequenceRequest
from kvproof.stateful_tests.sequences.oracle import RELEASE_ORDER, RELEASES, Op, _rebooking_call, wire_format_for


@pytest.mark.parametrize("version", RELEASE_ORDER)
def test_every_release_with_a_slot_tracker_has_exactly_one_row(version):
    release = wire_format_for(version)
    assert release.note == "" and release.version == version
    assert sum(RELEASE_ORDER.index(w.first) <= RELEASE_ORDER.index(version) <= RELEASE_ORDER.index(w.last) for w in RELEASES) == 1
    assert version in release.banner() and release.wire.group_field in release.banner()


def test_the_rows_say_what_differs():
    assert wire_format_for("1.3.1").wire.group_field == "tenant_id"
    assert wire_format_for("1.4.0").wire.group_field == "routing_group"
    assert [wire_format_for(v).wire.replica_rules for v in ("1.4.2", "1.5.0", "1.6.1")] == ["rebooking", "fenced", "fenced"]


def test_unknown_releases_get_a_guess_that_says_so():
    assert wire_format_for("1.7.0").wire is RELEASES[-1] and "newer than 1.6.1" in wire_format_for("1.7.0").note
    assert wire_format_for("1.4.3").wire.first == "1.4.0" and wire_format_for("1.4.3").note
    assert wire_format_for(None).version == "unknown" and wire_format_for(None).note


def _two_rank_tracker() -> SlotTracker:
    t = SlotTracker()
    t.register_worker(1, 0, 2, 0)
    t.add_request(SequenceRequest("a", WorkerWithDpRank(1, 0), (11, 12), True, None, PrefillLoadHint(100, None)), 1)
    return t


def test_rebooking_add_moves_the_booking_and_leaves_the_first_copy():
    t = _two_rank_tracker()
    request = SequenceRequest("a", WorkerWithDpRank(1, 1), (13, 14, 15), True, None, PrefillLoadHint(300, None))
    op = Op("add", 0, "a", (1, 1), (13, 14, 15), 300, None, True, "replica")
    _rebooking_call(op, WorkerWithDpRank(1, 1), lambda m, at: m.add_request(request, at), request)(t, 2)
    loads = t.loads(3)
    assert t.snapshot().request_index["a"] == WorkerWithDpRank(1, 1)
    assert (loads[WorkerWithDpRank(1, 0)].active_prefill_tokens, loads[WorkerWithDpRank(1, 1)].active_prefill_tokens) == (
        100,
        300,
    )


@pytest.mark.parametrize(
    "named, tokens_after", [((1, 1), 0), ((9, 0), 100)], ids=["wrong-worker-acts-on-owner", "unregistered-dropped"]
)
def test_rebooking_mark_ignores_the_named_worker_unless_it_is_unregistered(named, tokens_after):
    t = _two_rank_tracker()
    op = Op("mark", 0, "a", named, via="replica")
    _rebooking_call(op, WorkerWithDpRank(*named), lambda m, at: None, None)(t, 2)
    assert t.loads(3)[WorkerWithDpRank(1, 0)].active_prefill_tokens == tokens_after


SITES = os.environ.get("KVPROOF_RELEASE_SITES")


@pytest.mark.dynamo
@pytest.mark.skipif(not SITES, reason="set KVPROOF_RELEASE_SITES to a folder of extracted ai-dynamo-runtime wheels")
@pytest.mark.parametrize("version", RELEASE_ORDER)
def test_each_release_is_detected_and_conforms(version):
    site = Path(SITES or "") / version
    if not (site / "dynamo" / "slot_tracker").is_dir():
        pytest.skip(f"no extracted {version} under {SITES}")
    env = {**os.environ, "PYTHONPATH": str(site)}
    ran = subprocess.run(
        [sys.executable, "-m", "kvproof", "conform", "slot-tracker", "--scenarios", "4", "--parallel", "4"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert ran.stdout.startswith(f"slot tracker: ai-dynamo-runtime {version}, wire format: "), ran.stdout
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "Traceback" not in ran.stdout + ran.stderr
