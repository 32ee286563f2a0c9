"""The ``order`` plugin: a mutant's tests run file by file, each file's items in collection order, cheapest file first."""

import itertools
import json
import os
import subprocess
import sys
import textwrap

from hypothesis import given
from hypothesis import strategies as st

from kvproof.stateful_tests.mutation.order import (
    COST_FILE_ENV,
    MUTANT_ENV,
    Costs,
    costs_of,
    file_of,
    read_costs,
    run_order,
)

FILES = ("a/test_x.py", "b/test_y.py", "c/test_z.py")
nodeids = st.lists(
    st.tuples(st.sampled_from(FILES), st.integers(0, 5)).map(lambda p: f"{p[0]}::test_{p[1]}"), unique=True, max_size=14
)
seconds = st.dictionaries(st.sampled_from(FILES), st.floats(0, 100, allow_nan=False), max_size=3)


@given(nodeids, seconds, st.randoms(use_true_random=False))
def test_run_order_groups_files_cheapest_first_in_collection_order(ids, secs, rnd):
    collected = sorted(ids, key=lambda n: (FILES.index(file_of(n)), n))
    rnd.shuffle(collected)  # some other order of collection than the names'
    known = collected[: len(collected) // 2 + 1]
    order = run_order(ids, Costs(secs, known))
    assert sorted(order) == list(range(len(ids))), "a permutation"
    ran = [ids[i] for i in order]
    runs = [file_of(n) for i, n in enumerate(ran) if i == 0 or file_of(ran[i - 1]) != file_of(n)]
    assert len(runs) == len(set(runs)), "each file's items are contiguous"
    files = runs
    cost = [secs.get(f, float("inf")) for f in files]
    assert cost == sorted(cost), "cheapest file first, unmeasured files last"
    first = {f: [file_of(n) for n in ids].index(f) for f in files}
    assert all(
        first[a] < first[b] for a, b in itertools.pairwise(files) if secs.get(a, float("inf")) == secs.get(b, float("inf"))
    )
    for f in files:
        mine = [n for n in ran if file_of(n) == f]
        listed = [n for n in mine if n in known]
        assert mine[: len(listed)] == sorted(listed, key=known.index), "collection order, known items first"
        assert mine[len(listed) :] == [n for n in ids if file_of(n) == f and n not in known], "the rest as they came"


def test_costs_sum_every_phase_per_file_and_item_keep_the_dearest_setup_and_the_collection_order():
    reports = [
        ("a/t.py::x", "setup", 2.0),
        ("a/t.py::x", "call", 0.5),
        ("a/t.py::x", "teardown", 0.25),
        ("b/t.py::y", "call", 0.1),
        ("a/t.py::z", "setup", 0.5),
        ("a/t.py::z", "call", 1.0),
    ]
    costs = costs_of(reports)
    assert costs.seconds == {"a/t.py": 4.25, "b/t.py": 0.1} and list(costs.collected) == ["a/t.py::x", "b/t.py::y", "a/t.py::z"]
    assert costs.items == {"a/t.py::x": 2.75, "b/t.py::y": 0.1, "a/t.py::z": 1.5} and costs.setups == {"a/t.py": 2.0}
    assert Costs.from_json(json.loads(json.dumps(costs.to_json()))) == Costs(
        dict(costs.seconds), list(costs.collected), dict(costs.items), dict(costs.setups)
    )
    assert read_costs(None) == Costs() and read_costs("/nonexistent/costs.json") == Costs()


FIXTURED = """
import pathlib, time, pytest
@pytest.fixture(scope="module")
def machine():
    with open("setups.log", "a") as f:
        f.write("machine\\n")
    time.sleep(0.3)
def test_one(machine):
    pathlib.Path("ran.log").open("a").write("slow::test_one\\n")
def test_two(machine):
    pathlib.Path("ran.log").open("a").write("slow::test_two\\n")
"""
PLAIN = """
import pathlib
def test_quick():
    pathlib.Path("ran.log").open("a").write("quick::test_quick\\n")
"""


def pytest_in(folder, args, **env):
    for name in ("setups.log", "ran.log"):
        (folder / name).unlink(missing_ok=True)
    full = {**os.environ, **env}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--rootdir={folder}", *args],
        cwd=folder,
        env=full,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return (folder / "setups.log").read_text().split(), (folder / "ran.log").read_text().split()


def test_a_session_runs_each_file_once_and_the_measured_cheapest_first(tmp_path):
    """Interleaved node ids, as mutmut passes them: the plugin sets the module fixture up once; without it, twice."""
    (tmp_path / "test_slow.py").write_text(textwrap.dedent(FIXTURED))
    (tmp_path / "test_quick.py").write_text(textwrap.dedent(PLAIN))
    interleaved = ["test_slow.py::test_one", "test_quick.py::test_quick", "test_slow.py::test_two"]
    setups, ran = pytest_in(tmp_path, interleaved)
    assert setups == ["machine", "machine"], "negative control: without the plugin the fixture is set up twice"

    plugin = ["-p", "kvproof.stateful_tests.mutation.order"]
    cost_file = tmp_path / "costs.json"
    setups, ran = pytest_in(
        tmp_path, [*plugin, "test_slow.py", "test_quick.py"], **{MUTANT_ENV: "stats", COST_FILE_ENV: str(cost_file)}
    )
    costs = read_costs(str(cost_file))
    assert costs.seconds["test_slow.py"] > 0.3 > costs.seconds["test_quick.py"], "the stats pass measured the fixture"
    assert list(costs.collected) == ["test_slow.py::test_one", "test_slow.py::test_two", "test_quick.py::test_quick"]

    setups, ran = pytest_in(
        tmp_path, [*plugin, *reversed(interleaved)], **{MUTANT_ENV: "kvproof.x__mutmut_1", COST_FILE_ENV: str(cost_file)}
    )
    assert setups == ["machine"], "the file's items ran together"
    assert ran == ["quick::test_quick", "slow::test_one", "slow::test_two"], "cheapest file first, then collection order"
