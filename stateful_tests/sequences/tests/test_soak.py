"""The slot tracker's churn soak (stateful_tests/sequences/soak.py): its laws, each with the leaking twin it catches."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kvproof.stateful_tests.sequences import soak

SHORT = soak.TrackerPlan(epochs=7, epoch_s=240.0, leave=0.01, warmup=1, window=2, traced=False)
"""A few seconds: 7 epochs of 4 simulated minutes (the expiry is 5), workers leaving three times as often."""


@pytest.fixture(scope="module")
def reference_report() -> soak.TrackerSoakReport:
    return soak.run_tracker_soak(soak.TRACKERS["reference"], "reference", replace(SHORT, traced=True))


def test_the_load_books_frees_expires_and_churns(reference_report: soak.TrackerSoakReport) -> None:
    """The soak exercises what it claims: requests booked at every sample, and never-freed ones expired in time."""
    assert all(s.live.booked > 50 for s in reference_report.samples)
    assert all(s.traced_bytes > 0 for s in reference_report.samples)


@pytest.mark.parametrize("name", ["reference", "impl"])
def test_no_collection_grows(name: str, reference_report: soak.TrackerSoakReport) -> None:
    report = reference_report if name == "reference" else soak.run_tracker_soak(soak.TRACKERS[name], name, SHORT)
    assert report.failed_laws() == set(), (report.sizes, report.trends)


@pytest.mark.parametrize("name", sorted(soak.LEAKY))
def test_each_leaking_twin_is_caught_by_its_law(name: str) -> None:
    factory, law = soak.LEAKY[name]
    report = soak.run_tracker_soak(factory, name, SHORT)
    assert law in report.failed_laws(), (report.sizes, report.trends)


def test_the_slot_law_flags_slots_of_a_gone_worker() -> None:
    """The slot law's control, on a sample: two slots where one rank is registered."""
    sample = soak.TrackerSample(1, 0, soak.TrackerLive(booked=0, blocks=0, ranks=1), {"len SlotTracker.slots": 2}, 0)
    assert set(soak.size_problems([sample])) == {"slots <= registered ranks"}
