"""The mutation report's arithmetic, without running mutmut: verdicts, scores, gaps, goals, equivalents, shards."""

import json
import textwrap
from pathlib import Path

import pytest

from kvproof.report import write_json
from kvproof.stateful_tests.harness.shards import Shard
from kvproof.stateful_tests.mutation import driver
from kvproof.stateful_tests.mutation.driver import MutationRun, groups_of
from kvproof.stateful_tests.mutation.equivalents import (
    Equivalent,
    EquivalentsError,
    MutantName,
    function_code,
    function_hash,
    function_source,
    load_equivalents,
    parse_equivalents,
    split_equivalents,
)
from kvproof.stateful_tests.mutation.profiles import (
    CI_TESTS,
    GOALS,
    LAYERS,
    MutateProfileError,
    MutationTarget,
    ci_tests,
    layer_modules,
    rejudge_refusal,
    targets_for,
)
from kvproof.stateful_tests.mutation.scores import (
    EQUIVALENT,
    KILLED,
    NO_TESTS,
    SURVIVED,
    MergeError,
    Mutant,
    Report,
    join_ttd,
    median_ttd,
    merge_module_runs,
    merge_shard_runs,
    p90_ttd,
    read_shard_run,
    sharded_names,
    status_of,
)
from kvproof.stateful_tests.mutation.workspace import mutmut_config

ROOT = Path(__file__).resolve().parents[3]
COV = "kvproof.spec.coverage.x_raised_cutoff__mutmut_"


def mutants(module, killed=0, survived=0, no_tests=0, timeout=0):
    out, n = [], 0
    for code, count in ((1, killed), (0, survived), (33, no_tests), (36, timeout)):
        for _ in range(count):
            n += 1
            out.append(Mutant(f"kvproof.{module.removesuffix('.py').replace('/', '.')}.x_f__mutmut_{n}", module, code))
    return out


def test_exit_codes_map_to_verdicts():
    assert [status_of(c) for c in (1, 3, 0, 33, 5, 36, -24, None, 35, -11)] == [
        KILLED,
        KILLED,
        SURVIVED,
        NO_TESTS,
        NO_TESTS,
        "timeout",
        "timeout",
        "other",
        "other",
        "other",
    ]


def test_score_is_killed_over_killed_and_survived_with_gaps_apart():
    report = Report(mutants("spec/a.py", killed=19, survived=1, no_tests=30))
    (row,) = report.modules
    assert row.score == pytest.approx(0.95)  # the 30 gaps are neither killed nor in the denominator
    assert row[NO_TESTS] == 30 and row.total == 50
    assert report.failures() == []
    assert "no tests (gap)" in __import__("kvproof.stateful_tests.mutation.scores", fromlist=["HEADERS"]).HEADERS


def test_gaps_never_count_as_killed():
    """Negative control: a module whose mutants no test reaches has no score and fails its layer."""
    report = Report(mutants("spec/a.py", no_tests=10))
    assert report.modules[0].score is None
    assert any("no mutant was judged" in f for f in report.failures())


def test_goals_per_layer():
    report = Report(mutants("spec/a.py", killed=94, survived=6) + mutants("impl/b.py", killed=9, survived=1))
    failures = report.failures()
    assert len(failures) == 1 and failures[0].startswith("spec/: score 94.0% is below the goal 95%")
    assert GOALS == {"spec": 0.95, "reference": 0.95, "impl": 0.90}
    assert [t.name for t in report.layers] == ["impl", "spec"]


def test_timeouts_count_as_detected_and_unjudged_mutants_fail_the_run():
    report = Report(mutants("spec/a.py", killed=9, timeout=1))
    assert report.modules[0].score == 1.0 and not report.failures()
    broken = Report([*mutants("spec/a.py", killed=10), Mutant("kvproof.spec.a.x_g__mutmut_1", "spec/a.py", None)])
    assert any("no verdict" in f for f in broken.failures())
    assert any("no mutants" in f for f in Report([]).failures())
    stopped = Report(mutants("spec/a.py", killed=10), stopped="mutmut ran past 60 s")
    assert stopped.failures() == ["the run was stopped before every mutant was judged: mutmut ran past 60 s"]


def test_a_listed_equivalent_leaves_the_score_only_while_current():
    survivor = Mutant(COV + "7", "spec/coverage.py", 0, function_hash="aaa")
    others = mutants("spec/coverage.py", killed=19)
    entry = Equivalent(COV + "7", "aaa", "c >= n and c > n agree")
    valid, stale = split_equivalents([entry], {survivor.name: "aaa"})
    survivor.equivalent = valid.get(survivor.name)
    report = Report([survivor, *others])
    assert survivor.status == EQUIVALENT and report.modules[0].score == 1.0 and not stale
    # the function was edited: its hash changed, the entry is stale and the survivor counts again
    valid, stale = split_equivalents([entry], {survivor.name: "bbb"})
    survivor.equivalent = valid.get(survivor.name)
    assert survivor.status == SURVIVED and stale == [entry]
    assert Report([survivor, *others]).modules[0].score == pytest.approx(19 / 20)


def test_a_killed_mutant_is_never_made_equivalent():
    killed = Mutant(COV + "1", "spec/coverage.py", 1, equivalent=Equivalent(COV + "1", "x", "listed by mistake"))
    assert killed.status == KILLED


def test_mutant_names_parse():
    assert MutantName.parse(COV + "7") == MutantName("kvproof.spec.coverage", None, "raised_cutoff", 7)
    method = MutantName.parse("kvproof.spec.coverage.xǁEdgeStateǁ__repr____mutmut_2")
    assert (method.cls, method.function, method.number, method.qualname) == ("EdgeState", "__repr__", 2, "EdgeState.__repr__")
    assert method.source_path(ROOT) == ROOT / "spec" / "coverage.py"
    for bad in ("kvproof.spec.coverage.raised_cutoff", "x_f__mutmut_1", "kvproof.spec.f__mutmut_x"):
        with pytest.raises(EquivalentsError):
            MutantName.parse(bad)


def test_function_hash_follows_the_function_text():
    source = "class C:\n    def f(self):\n        return 1\n\ndef g(x):\n    return x\n"
    assert function_source(source, "C", "f") == "def f(self):\n        return 1"
    assert function_source(source, None, "g") == "def g(x):\n    return x"
    assert function_source(source, None, "f") is None and function_source(source, "D", "f") is None
    assert function_hash(ROOT, COV + "1") == function_hash(ROOT, COV + "99")  # one hash per function
    assert function_hash(ROOT, COV + "1") != function_hash(ROOT, "kvproof.spec.coverage.x_covered_by__mutmut_1")
    assert function_hash(ROOT, "kvproof.spec.nosuch.x_f__mutmut_1") is None


def test_a_docstring_comment_or_layout_edit_is_not_a_code_change_and_a_code_edit_is():
    source = 'def f(x):\n    """Old words."""\n    y = x  # keep\n    return y\n\nclass C:\n    def g(self): "doc"; return 1\n'
    same = function_code(source, None, "f")
    reworded = source.replace("Old words.", "New words,\n    over two lines.")
    assert function_code(reworded, None, "f") == same
    assert function_code(source.replace("# keep", "# kept"), None, "f") == same  # a comment
    assert function_code(source.replace("y = x", "y = (\n        x\n    )"), None, "f") == same  # layout, as ruff format
    assert function_code(source.replace("def f(x):", "def f(x) :"), None, "f") == same
    # the negative controls: code edits
    assert function_code(source.replace("return y", "return -y"), None, "f") != same
    assert function_code(source.replace("y = x", "y = x + 0"), None, "f") != same
    assert function_code(source.replace('"""Old words."""', '"""Old words.""" + ""'), None, "f") != same  # no docstring
    assert function_code(source, "C", "g") == function_code("class C:\n    def g(self):\n        return 1\n", "C", "g")
    assert function_code(source, None, "h") is None


def test_the_equivalents_file_parses_and_every_entry_has_a_reason(tmp_path):
    text = textwrap.dedent(f'''
        [[equivalent]]
        mutant = "{COV}7"
        function_hash = "abc"
        reason = "both branches give n"
    ''')
    assert parse_equivalents(text) == [Equivalent(COV + "7", "abc", "both branches give n")]
    with pytest.raises(EquivalentsError, match="reason"):
        parse_equivalents(text.replace('reason = "both branches give n"', 'reason = ""'))
    assert load_equivalents(tmp_path) == []  # no file: nothing set aside
    for entry in load_equivalents(ROOT):  # the checkout's reviewed file: well-formed and current
        assert entry.reason and function_hash(ROOT, entry.mutant) == entry.function_hash, entry.mutant


def test_shards_partition_the_mutant_names():
    names = [f"kvproof.spec.m.x_f__mutmut_{i}" for i in range(23)]
    shards = [sharded_names(reversed(names), Shard(k, 4)) for k in range(1, 5)]
    assert sorted(n for s in shards for n in s) == sorted(names)
    assert not set(shards[0]) & set(shards[1])
    assert sharded_names(names, Shard(1, 1)) == sorted(names)
    assert sharded_names(names[:2], Shard(3, 3)) == []  # an empty shard is harmless


def test_time_to_detection_joins_and_takes_the_median():
    ms = mutants("spec/a.py", killed=3, survived=1)
    join_ttd(
        ms,
        [
            {"mutant": ms[0].name, "ttd_s": 0.2, "first_fail": "t::a"},
            {"mutant": ms[1].name, "ttd_s": 0.4},
            {"mutant": ms[2].name, "ttd_s": 0.9},
            {"mutant": ms[3].name, "ttd_s": None},
            {"mutant": "other", "ttd_s": 5},
        ],
    )
    assert ms[0].first_fail == "t::a" and median_ttd(ms) == pytest.approx(0.4)
    assert median_ttd(mutants("spec/a.py", survived=2)) is None and p90_ttd(mutants("spec/a.py", survived=2)) is None


def test_json_report_lists_survivors_with_diffs_and_gaps():
    ms = mutants("spec/a.py", killed=1, survived=1, no_tests=1)
    ms[1].diff = "-a\n+b"
    body = json.loads(json.dumps(Report(ms).to_json({"profile": "quick"})))
    assert body["profile"] == "quick" and body["passed"] is False
    assert [s["diff"] for s in body["survivors"]] == ["-a\n+b"] and body["no_tests"] == [ms[2].name]
    assert body["modules"][0]["no_tests"] == 1 and body["modules"][0]["score"] == 0.5


def test_profiles_name_real_files_and_the_config_selects_them():
    quick = targets_for("quick", ROOT)
    assert quick and all(t.layer == "spec" for t in quick)
    assert targets_for("quick", ROOT, ["impl"]) == ()
    tests = ci_tests()
    assert tests and not any("soak" in t or "oracle" in t or "release" in t for t in tests)
    spec_tests = ci_tests("spec")
    assert (
        "stateful_tests/tree/tests/test_spec_coverage.py" in spec_tests and "stateful_tests/tree/tests/test_laws.py" in spec_tests
    )
    # the spec is judged by its laws and, for the tree, the reference tree's tests and vectors that drive it; never by impl/'s
    assert not any("test_impl_" in t for t in spec_tests) and set(spec_tests) < set(tests)
    assert "stateful_tests/tree/tests/test_vectors.py" in spec_tests
    ci = targets_for("ci", ROOT, ["reference"])
    assert {t.module for t in ci} == {"reference/radix_tree.py", "reference/sequences.py", "reference/wire.py"}
    config = mutmut_config(quick)
    assert 'only_mutate = ["src/kvproof/spec/coverage.py"' in config and "kvproof.stateful_tests.mutation.ttd" in config
    assert "kvproof.stateful_tests.mutation.order" in config and "kvproof.stateful_tests.mutation.stall" in config
    assert "\ntimeout_multiplier = 4.0\ntimeout_constant = 20.0\n" in config
    assert '"--run-slow"' in config  # the tests marked slow judge mutants too
    with pytest.raises(MutateProfileError):
        targets_for("deep", ROOT)
    with pytest.raises(MutateProfileError):
        targets_for("quick", ROOT, ["proofs"])


def test_every_module_of_every_layer_has_its_ci_judges():
    """The ci profile covers spec/, reference/ and impl/ whole: every module, with its own test files."""
    modules = [m for layer in LAYERS for m in layer_modules(ROOT, layer)]
    assert sorted(t.module for t in targets_for("ci", ROOT)) == sorted(modules)
    assert set(CI_TESTS) == set(modules), "a module without a test list, or a list for a module that is gone"
    own = {m: f"test_{m.split('/')[0]}_{Path(m).stem}.py" for m in modules}
    mirrored = [m for m in modules if any(Path(t).name == own[m] for t in CI_TESTS[m])]
    assert "reference/radix_tree.py" in mirrored and "impl/state_roundtrip.py" in mirrored


def test_paths_select_a_module_or_a_layer_and_refuse_an_unknown_one():
    assert [t.module for t in targets_for("ci", ROOT, ["reference/sequences.py"])] == ["reference/sequences.py"]
    assert [t.module for t in targets_for("ci", ROOT, ["impl/lane.py", "reference"])] == [
        "reference/radix_tree.py",
        "reference/sequences.py",
        "reference/wire.py",
        "impl/lane.py",
    ]
    for bad in ("reference/nothing.py", "kvproof/cli.py", "refer"):
        with pytest.raises(MutateProfileError):
            targets_for("ci", ROOT, [bad])


def test_a_module_missing_from_the_ci_lists_fails_the_profile(monkeypatch):
    """The negative control of the coverage test above: a module left without judges is refused, not run with none."""
    monkeypatch.delitem(CI_TESTS, "impl/lane.py")
    with pytest.raises(MutateProfileError, match=r"impl/lane\.py has no test list"):
        targets_for("ci", ROOT, ["impl"])


def test_targets_sharing_a_test_list_run_together_and_each_list_alone(monkeypatch, tmp_path):
    """``run_groups``: one mutmut run per distinct list, the reports joined; a limit reached stops the rest, loudly."""
    a, b, c = (
        MutationTarget("spec/a.py", ("t1.py",)),
        MutationTarget("spec/b.py", ("t2.py",)),
        MutationTarget("spec/c.py", ("t1.py",)),
    )
    assert groups_of([a, b, c]) == [(a, c), (b,)]
    calls = []

    def fake_run(root, group, shard, max_children, equivalents, timeout, work, pytest_args, say, only=None):
        calls.append(([t.module for t in group], work.name))
        ms = [m for t in group for m in mutants(t.module, killed=1, survived=1)]
        return MutationRun(Report(ms), None, [], 0.5, work / "log")

    monkeypatch.setattr(driver, "run_mutation", fake_run)
    run = driver.run_groups(ROOT, [a, b, c], work=tmp_path)
    assert calls == [(["spec/a.py", "spec/c.py"], "group-1"), (["spec/b.py"], "group-2")]
    assert sorted({m.module for m in run.report.mutants}) == ["spec/a.py", "spec/b.py", "spec/c.py"]
    assert run.report.stopped is None and len(run.runs) == 2
    clock = iter([0.0, 0.0, 10.0, 10.0])
    monkeypatch.setattr(driver.time, "monotonic", lambda: next(clock, 10.0))
    calls.clear()
    stopped = driver.run_groups(ROOT, [a, b, c], timeout=5.0, work=tmp_path)
    assert len(calls) == 1 and "no time for 1 modules (spec/b.py)" in (stopped.report.stopped or "")
    assert any("stopped" in line for line in stopped.report.failures())


def shard_files(tmp_path, ms, count, profile="ci", **changes):
    """Write the ``--json`` report each shard K/``count`` of a run over ``ms`` would write."""
    paths = []
    for k in range(1, count + 1):
        shard = Shard(k, count)
        mine = set(sharded_names([m.name for m in ms], shard))
        part = Report([m for m in ms if m.name in mine])
        body = {"profile": profile, "paths": ["spec"], "shard": str(shard), "seconds": 2.0, **changes.get(k, {})}
        paths.append(tmp_path / f"shard-{k}.json")
        write_json(paths[-1], "mutate", part.to_json(body))
    return paths


def test_merged_shards_report_what_the_whole_run_reports(tmp_path):
    ms = mutants("spec/a.py", killed=7, survived=2, no_tests=1, timeout=1) + mutants("spec/b.py", killed=4, survived=1)
    ms[7].diff = "-a\n+b"
    ms[8].equivalent = Equivalent(ms[8].name, "h", "same value")
    merged = merge_shard_runs([read_shard_run(p) for p in shard_files(tmp_path, ms, 3)])
    whole = Report(ms)
    assert merged.table_rows() == whole.table_rows() and merged.failures() == whole.failures()
    assert {m.name: (m.status, m.diff) for m in merged.mutants} == {m.name: (m.status, m.diff) for m in ms}


@pytest.mark.parametrize(
    "broken, message",
    [
        ("missing", "shards 2/3 are missing"),
        ("twice", "shard 1/3 is given twice"),
        ("other profile", "profile quick against ci"),
        ("overlap", "shards overlap"),
        ("not a report", "not a mutate report"),
    ],
)
def test_a_merge_refuses_what_is_not_every_shard_of_one_run(tmp_path, broken, message):
    """The control: each way a set of files can fail to be one whole run is refused, naming it."""
    ms = mutants("spec/a.py", killed=6, survived=3)
    paths = shard_files(tmp_path, ms, 3)
    if broken == "missing":
        paths = [paths[0], paths[2]]
    elif broken == "twice":
        paths = [paths[0], paths[0], paths[1], paths[2]]
    elif broken == "other profile":
        (tmp_path / "q").mkdir()
        paths[1] = shard_files(tmp_path / "q", ms, 3, profile="quick")[1]
    elif broken == "overlap":
        body = json.loads(paths[1].read_text())
        body["mutants"].append(json.loads(paths[0].read_text())["mutants"][0])
        paths[1].write_text(json.dumps(body))
    else:
        paths[2].write_text(json.dumps({"schema": "kvproof.check/1"}))
    with pytest.raises(MergeError, match=message):
        merge_shard_runs([read_shard_run(p) for p in paths])


def test_a_stopped_shard_stops_the_merged_run(tmp_path):
    ms = mutants("spec/a.py", killed=4)
    paths = shard_files(tmp_path, ms, 2)
    body = json.loads(paths[1].read_text())
    body["stopped"] = "the time limit (60 s)"
    paths[1].write_text(json.dumps(body))
    merged = merge_shard_runs([read_shard_run(p) for p in paths])
    assert any("shard 2/2: the time limit" in line for line in merged.failures())


def module_files(tmp_path, runs, profile="ci"):
    """Write the ``--json`` report of each whole run: ``runs`` maps its --paths to its mutants."""
    paths = []
    for i, (selected, ms) in enumerate(runs.items()):
        paths.append(tmp_path / f"run-{i}.json")
        write_json(
            paths[-1],
            "mutate",
            Report(ms).to_json({"profile": profile, "paths": selected.split(","), "shard": "1/1", "seconds": 3.0}),
        )
    return paths


SPEC_MODULES = {"spec": ["spec/a.py", "spec/b.py"], "impl": ["impl/c.py"]}


def test_whole_runs_split_by_module_merge_into_the_whole_layers_report(tmp_path):
    a, b, c = (
        mutants("spec/a.py", killed=5, survived=1),
        mutants("spec/b.py", killed=2, survived=2),
        mutants("impl/c.py", killed=3),
    )
    merged = merge_module_runs(
        [read_shard_run(p) for p in module_files(tmp_path, {"spec/a.py": a, "spec/b.py": b, "impl": c})], SPEC_MODULES
    )
    whole = Report(a + b + c)
    assert merged.table_rows() == whole.table_rows() and merged.failures() == whole.failures()
    assert [(t.name, t.score) for t in merged.layers] == [("impl", 1.0), ("spec", 0.7)]


@pytest.mark.parametrize(
    "broken, message",
    [
        ("part of a layer", r"^spec/ is not judged whole: no report has spec/b.py$"),
        ("a module twice", r"^spec/a.py is judged by .*run-0.json and by .*run-1.json: give each module once$"),
        ("a shard", r"is shard 1/2: merge a run's shards with each other, or whole runs by module$"),
        ("other profile", r"is of another profile than .*: profile quick against ci$"),
    ],
)
def test_a_merge_by_module_refuses_what_does_not_judge_whole_layers_once(tmp_path, broken, message):
    """The control: a layer judged in part, a module judged twice, a shard among whole runs, another profile."""
    a, b = mutants("spec/a.py", killed=3), mutants("spec/b.py", killed=3)
    runs = {
        "part of a layer": {"spec/a.py": a, "impl/c.py": mutants("impl/c.py", killed=1)},
        "a module twice": {"spec/a.py": a, "spec": a + b},
    }.get(broken, {"spec/a.py": a, "spec/b.py": b})
    paths = module_files(tmp_path, runs)
    if broken in ("a shard", "other profile"):
        body = json.loads(paths[1].read_text())
        body.update({"shard": "1/2"} if broken == "a shard" else {"profile": "quick"})
        paths[1].write_text(json.dumps(body))
    with pytest.raises(MergeError, match=message):
        merge_module_runs([read_shard_run(p) for p in paths], SPEC_MODULES)


def test_a_rejudge_carries_only_kills_of_unchanged_functions():
    """``carried_verdicts``: killed and timed-out verdicts of a function whose source is unchanged are kept; a
    survivor, a gap, an unchecked mutant, and any verdict of an edited function (its hash moved) are judged again."""
    from kvproof.stateful_tests.mutation.driver import carried_verdicts

    now = function_hash(ROOT, COV + "1")
    assert now is not None
    earlier = Report(
        [
            Mutant(COV + "1", "spec/coverage.py", 1, function_hash=now),
            Mutant(COV + "2", "spec/coverage.py", 36, function_hash=now),
            Mutant(COV + "3", "spec/coverage.py", 1, function_hash="an older text"),
            Mutant(COV + "4", "spec/coverage.py", 0, function_hash=now),
            Mutant(COV + "5", "spec/coverage.py", 33, function_hash=now),
            Mutant(COV + "6", "spec/coverage.py", None, function_hash=now),
        ]
    )
    assert sorted(carried_verdicts(earlier, ROOT)) == [COV + "1", COV + "2"]


def test_a_rejudge_takes_the_earlier_runs_modules_or_some_of_them_and_nothing_else():
    """``--rejudge``: the same profile and shard; modules all of the earlier run's, or a part (a part's time)."""
    impl = ("impl/_sync.py", "impl/lane.py", "impl/radix_tree.py")
    part = targets_for("ci", ROOT, ["impl/lane.py"])
    assert rejudge_refusal("ci", impl, "1/1", "ci", part, "1/1") is None
    assert rejudge_refusal("ci", ("impl",), "1/1", "ci", targets_for("ci", ROOT, ["impl"]), "1/1") is None
    assert "did not run reference/sequences.py" in rejudge_refusal(
        "ci", impl, "1/1", "ci", targets_for("ci", ROOT, ["reference/sequences.py"]), "1/1"
    )
    assert "give the same profile and shard" in rejudge_refusal("quick", impl, "1/1", "ci", part, "1/1")
    assert "give the same profile and shard" in rejudge_refusal("ci", impl, "1/2", "ci", part, "1/1")


def test_the_90th_percentile_of_detection_is_the_nearest_rank_over_killed_mutants():
    timed = mutants("spec/a.py", killed=10, survived=1)
    for i, m in enumerate(timed[:10]):
        m.ttd_s = float(i + 1)  # 1 .. 10 s
    timed[10].ttd_s = 99.0  # a survivor's time is no detection
    assert p90_ttd(timed) == 9.0 and median_ttd(timed) == 5.5
    assert p90_ttd(timed[:1]) == 1.0
