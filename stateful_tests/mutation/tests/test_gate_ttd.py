"""mutation/gate_ttd.py: the gate's time to detection over a sample of killed mutants.

The sample is deterministic and spread over the killed mutants by name; a gate that passes on a killed mutant is
counted apart, never as a detection; the summary's median and 90th percentile are over the detections only.
"""

from kvproof.stateful_tests.mutation.gate_ttd import GateDetection, mutants_dir_of, sample_killed, summary
from kvproof.stateful_tests.mutation.scores import Mutant


def mutant(i: int, exit_code: int = 1) -> Mutant:
    return Mutant(f"kvproof.spec.coverage.x_f__mutmut_{i:03d}", "spec/coverage.py", exit_code, 0.1)


def test_the_sample_is_every_kth_killed_mutant_by_name_and_never_a_survivor():
    mutants = [mutant(i) for i in range(20)] + [mutant(100 + i, exit_code=0) for i in range(5)]
    picked = sample_killed(list(reversed(mutants)), 4)
    assert [m.name[-3:] for m in picked] == ["000", "005", "010", "015"]
    assert sample_killed(mutants, 0) == [] and len(sample_killed(mutants, 50)) == 20


def test_a_gate_that_passes_on_a_killed_mutant_is_named_and_not_counted_as_a_detection():
    found = [GateDetection("a", 2.0, True, 1), GateDetection("b", 4.0, True, 1), GateDetection("c", 30.0, False, 0)]
    line = summary(found, "quick")
    assert "median 3.0 s, 90th percentile 4.0 s, over 2 of 3 sampled" in line
    assert "the gate passed on c (exit 0)" in line
    assert "none caught, over 0 of 1" in summary([GateDetection("c", 30.0, False, None)], "quick")
    assert "not measured" in summary([], "quick")


def test_the_mutants_folder_is_the_workspace_that_mutated_the_module(tmp_path):
    for group, module in (("group-1", "spec/coverage.py"), ("group-2", "spec/token_load.py")):
        meta = tmp_path / group / "mutants" / "src" / "kvproof" / (module + ".meta")
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text("{}")
    workspaces = [tmp_path / "group-1", tmp_path / "group-2"]
    assert mutants_dir_of(workspaces, "spec/token_load.py") == tmp_path / "group-2" / "mutants"
    assert mutants_dir_of(workspaces, "spec/match.py") is None
    assert mutants_dir_of(workspaces[:1], "spec/token_load.py") is None  # another run's workspace is never used
