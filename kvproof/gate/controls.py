"""A control for every gate row: the broken layer that must make the row FAIL (README's gate table).

Each ``RowControl`` breaks the layer its row names, either by naming a deliberately broken tree as
the target or by swapping one rule or structure for its broken twin (a ``pytest.MonkeyPatch``),
and says what the failure must contain. ``kvproof/tests/test_gate_rows.py`` runs every control
through the gate's own runner; a row without a control, or whose control passes or fails for
another reason, fails the suite.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest import MonkeyPatch

TREE_MUTANTS = "kvproof.stateful_tests.tree.mutants:"
POOLS = "kvproof.stateful_tests.tree.impl_mutants:"


# ----------------------------------------------------------------------------- how each control breaks its layer


def _broken_node_rule(mp: MonkeyPatch) -> None:
    """Spec.coverage.remove_at that never removes."""
    from kvproof.stateful_tests.tree import laws

    mp.setattr(laws, "remove_at", lambda state, rank, pos: (state, range(0)))  # removal that never removes


def _broken_concurrent_tree_in_the_twin(mp: MonkeyPatch) -> None:
    """The concurrent tree as ConcurrentExtendsInternalNode."""
    from kvproof.stateful_tests.tree import impl_mutants, twin

    mp.setattr(
        twin,
        "impl_vs_reference",
        functools.partial(twin.impl_vs_reference, impl_class=impl_mutants.ConcurrentExtendsInternalNode),
    )


def _broken_concurrent_tree_under_stress(mp: MonkeyPatch) -> None:
    """The concurrent tree as RepairRestoresEntries."""
    from kvproof.stateful_tests.tree import impl_mutants, stress

    mp.setattr(stress, "run_stress", functools.partial(stress.run_stress, tree_class=impl_mutants.RepairRestoresEntries))


def _broken_tracker(mutant_name: str) -> Callable[[MonkeyPatch], None]:
    def breaks(mp: MonkeyPatch) -> None:
        from kvproof.stateful_tests.sequences import model, mutants

        mp.setitem(model.TARGETS, "impl", getattr(mutants, mutant_name))  # the concurrent tracker's layer, broken

    breaks.__doc__ = f"The concurrent tracker as {mutant_name}."
    return breaks


def _broken_model_against_the_selection_service(mp: MonkeyPatch) -> None:
    """The reference tracker as FreeSkipsPrefillCleanup, compared with the selection service's ActiveSequences."""
    from kvproof.stateful_tests.sequences import model, mutants

    mp.setitem(model.TARGETS, "reference", mutants.FreeSkipsPrefillCleanup)


def _broken_tracker_under_stress(mp: MonkeyPatch) -> None:
    """The concurrent tracker as BookBeforeSlotLock."""
    from kvproof.stateful_tests.sequences import mutants, stress

    mp.setattr(stress, "stress", functools.partial(stress.stress, mutants.BookBeforeSlotLock))


def _a_sequence_control_that_catches_nothing(mp: MonkeyPatch) -> None:
    """A listed tracker mutant that is not broken."""
    from kvproof.reference.sequences import SlotTracker
    from kvproof.stateful_tests.sequences import mutants

    class NotBrokenTracker(SlotTracker):
        """Claims to be broken, is not: the controls row must report it uncaught."""

    mp.setattr(mutants, "MUTANTS", [*mutants.MUTANTS, NotBrokenTracker])
    mp.setitem(mutants.CAUGHT_BY, NotBrokenTracker, {"values"})


def _front_door_without_a_type_check(mp: MonkeyPatch) -> None:
    """The trees' early_exit taken by truth value (1, "yes" and None accepted)."""
    from kvproof.impl import radix_tree as impl_tree
    from kvproof.reference import radix_tree as reference_tree

    for module in (impl_tree, reference_tree):
        mp.setattr(module, "check_early_exit", bool)


def _broken_model_against_the_real_tracker(mp: MonkeyPatch) -> None:
    """The compared model as NoCredit."""
    from kvproof.stateful_tests.sequences import mutants, oracle

    mp.setattr(oracle, "conform_slot_tracker", functools.partial(oracle.conform_slot_tracker, model_factory=mutants.NoCredit))


def _broken_lab_rule(mp: MonkeyPatch) -> None:
    """Lab 23 rendered with the same-rank decode rule."""
    from kvproof.spec.service_queue import lab23_report
    from kvproof.stateful_tests.deepinfer import golden

    wrong = dataclasses.replace(golden.GOLDENS[0], render=functools.partial(lab23_report, "same-rank"))
    mp.setattr(golden, "GOLDENS", (wrong, *golden.GOLDENS[1:]))


def _broken_round_trip(mp: MonkeyPatch) -> None:
    """The round trip as SharedOffByOne."""
    from kvproof.stateful_tests.deepinfer import mutants, roundtrip_laws

    mp.setattr(roundtrip_laws, "run_suite", functools.partial(roundtrip_laws.run_suite, factory=mutants.SharedOffByOne))


def _a_round_trip_control_that_catches_nothing(mp: MonkeyPatch) -> None:
    """A listed round-trip mutant that is not broken."""
    from kvproof.impl.state_roundtrip import RoundTrip
    from kvproof.stateful_tests.deepinfer import mutants

    class NotBrokenRoundTrip(RoundTrip):
        """Claims to be broken, is not: the controls row must report it uncaught."""

    mp.setattr(mutants, "MUTANTS", (*mutants.MUTANTS, NotBrokenRoundTrip))
    mp.setitem(mutants.CAUGHT_BY, NotBrokenRoundTrip, ("R1",))


def _broken_proof_kernel(mp: MonkeyPatch) -> None:
    """The first Z3 proof over its broken rule."""
    from kvproof.proofs import registry

    first = registry.Z3_PROOFS[0]
    wrong = dataclasses.replace(first, build=functools.partial(first.build, **first.broken))  # the kernel, broken
    mp.setattr(registry, "Z3_PROOFS", [wrong, *registry.Z3_PROOFS[1:]])


def _broken_kernels_under_crosshair(mp: MonkeyPatch) -> None:
    """The kernels the diffbehavior pairs compare, swapped for their broken twins."""
    from kvproof.proofs import contracts_broken, crosshair_runner

    mp.setattr(crosshair_runner, "diff_checks", functools.partial(crosshair_runner.diff_checks, module=contracts_broken))
    mp.setattr(crosshair_runner, "contract_checks", lambda timeout: [])  # the contract half is not needed to fail the row


@dataclass(frozen=True)
class RowControl:
    """How to break the layer a row names: a broken ``target`` and/or a ``breaks`` patch; the row must
    then FAIL under ``profile`` with a detail containing ``says``."""

    row: str
    target: str
    breaks: Callable[[MonkeyPatch], None] | None
    profile: str
    says: str

    def describe(self) -> str:
        """One line for the README: the broken target, or what the patch breaks."""
        if ":" in self.target:
            return f"target {self.target.rpartition(':')[2]}"
        assert self.breaks is not None and self.breaks.__doc__, f"the control of {self.row} says nothing of what it breaks"
        return self.breaks.__doc__.strip().rstrip(".")


CONTROLS = [
    RowControl("node-rule laws", "impl", _broken_node_rule, "quick", "AssertionError"),
    RowControl("observed Dynamo behaviours", TREE_MUTANTS + "NoLookupScrub", None, "quick", "steps differ"),
    RowControl(
        "state machine vs contract", TREE_MUTANTS + "SplitCarriesOneTooMany", None, "quick", "snapshot breaks the contract"
    ),
    RowControl("dump rebuilds the tree", TREE_MUTANTS + "DumpDropsLastEvent", None, "quick", "rebuilt"),
    RowControl("bad input is rejected, harmless", TREE_MUTANTS + "AcceptsGarbage", None, "quick", "accepted"),
    RowControl("hostile input (fuzz)", "impl", _front_door_without_a_type_check, "quick", "Dynamo refused it"),
    RowControl("differential vs Dynamo", TREE_MUTANTS + "SplitDropsCarriedCutoffs", None, "quick", "streams differ"),
    RowControl("the Mooncake trace, routed", TREE_MUTANTS + "IgnoresRemovalBatches", None, "quick", "over-credits"),
    RowControl("equals reference (3 lanes, lockstep)", "impl", _broken_concurrent_tree_in_the_twin, "quick", "TwinMismatch"),
    RowControl("pool: pipelined streams, one flush", POOLS + "RoutesByEvent", None, "quick", "the reference says"),
    RowControl("interleavings: explorer + linearizability", POOLS + "FanoutWithoutGate", None, "quick", "not linearizable"),
    RowControl(
        "interleavings: explorer + linearizability",
        POOLS + "ForgetsRouteWithEventsInFlight",
        None,
        "quick",
        "remove-vs-own-events",
    ),
    RowControl(
        "pool: removal racing its workers' events",
        POOLS + "ForgetsRouteWithEventsInFlight",
        None,
        "quick",
        "check() after every worker was removed",
    ),
    RowControl("faults mid-operation: clean, torn or poisoned", POOLS + "NeverPoisoned", None, "quick", "broken="),
    RowControl("real-thread stress, strict + chaos", "impl", _broken_concurrent_tree_under_stress, "quick", "stress: ops="),
    RowControl("rule laws", "impl", _broken_tracker("NoCreditCap"), "quick", "no decay 1 ms after a removal"),
    RowControl("three-way state machine", "impl", _broken_tracker("ZeroTokenHintTracked"), "quick", "write model violates"),
    RowControl("upstream values", "impl", _broken_tracker("NoCreditCap"), "quick", "impl: "),
    RowControl(
        "bad input, harmless", "impl", _broken_tracker("MarkUnknownIsSilent"), "quick", "accepted, expected RequestNotFound"
    ),
    RowControl("stress (real threads)", "impl", _broken_tracker_under_stress, "ci", "problems="),
    RowControl("interleavings (explorer)", "impl", _broken_tracker("PublishAfterUnlock"), "quick", "registry has not converged"),
    RowControl("faults mid-operation: clean or poisoned", "impl", _broken_tracker("NeverPoisonedTracker"), "quick", "broken="),
    RowControl("negative controls", "impl", _a_sequence_control_that_catches_nothing, "quick", "NotBrokenTracker (values)"),
    RowControl("vs dynamo.slot_tracker", "impl", _broken_model_against_the_real_tracker, "quick", "mismatches in"),
    RowControl(
        "vs the selection service's ActiveSequences",
        "impl",
        _broken_model_against_the_selection_service,
        "quick",
        "mismatches; first:",
    ),
    RowControl(
        "production mode: lanes at once, reads racing", TREE_MUTANTS + "FedAtOnceOverCredits", None, "quick", "over-credits"
    ),
    RowControl("golden numbers (ch. 11 labs)", "impl", _broken_lab_rule, "quick", "printed lines differ"),
    RowControl("round-trip laws, numpy", "impl", _broken_round_trip, "quick", "laws fail"),
    RowControl("round-trip laws, torch CPU", "impl", _broken_round_trip, "quick", "laws fail"),
    RowControl("negative controls and traps", "impl", _a_round_trip_control_that_catches_nothing, "quick", "NotBrokenRoundTrip"),
    RowControl("Z3 proofs, controls sat", "impl", _broken_proof_kernel, "quick", "FAILED"),
    RowControl("CrossHair contracts and diffs", "impl", _broken_kernels_under_crosshair, "quick", "differs"),
]
