"""mutmut run as a subprocess in the workspace, one shard's mutants, and the verdicts read back.

``run_groups`` calls ``run_mutation`` once per group of targets that share a test list.
``run_mutation`` builds a fresh workspace, and then:

1. for a shard other than the whole run, generates the mutants first (mutmut's own generation
   step, in a short child process), lists every mutant name of the targets, and keeps the
   shard's (``scores.sharded_names``: sorted, the ``i``-th when ``i % N == K-1``), so the shards
   of a CI matrix partition the mutants;
2. runs ``python -m mutmut run --max-children J [NAMES...]`` in the workspace, its output going to
   ``mutmut.log`` there, with ``KVPROOF_TTD_FILE`` set so the ``ttd`` plugin records each mutant
   and ``KVPROOF_COST_FILE`` so the ``order`` plugin runs each mutant's tests file by file,
   cheapest first;
3. reads each target's ``.meta`` file (also after the time limit stopped mutmut: the mutants it
   had not reached read "not checked", and the report fails saying the run was stopped) (exit
   code and duration per mutant), joins the times to
   detection, and asks mutmut (one more child) for the survivors' diffs.

Every child runs in its own process group with a parent-death signal
(``harness.process_guard.spawn_guarded``), and the whole group is killed when the child ends,
times out or the caller is interrupted: no mutmut worker outlives the call.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...spec.errors import KvProofError
from ..harness.process_guard import GUARD, spawn_guarded
from ..harness.shards import WHOLE, Shard
from . import workspace as ws
from .equivalents import Equivalent, function_hash, split_equivalents
from .order import COST_FILE_ENV
from .profiles import MutationTarget
from .scores import KILLED, NO_TESTS, SURVIVED, TIMEOUT, Mutant, Report, join_ttd, sharded_names, status_of
from .ttd import TTD_FILE_ENV


class MutateError(KvProofError, RuntimeError):
    """mutmut is not installed, failed (its clean test run failed, say), or ran past the time limit."""


class MutateTimeout(MutateError):
    """A child ran past the time limit (and was killed with its whole group)."""


def mutmut_unavailable() -> str | None:
    """Why mutmut cannot run here (None when it imports)."""
    if importlib.util.find_spec("mutmut") is None:
        return "mutmut is not installed (pip install 'kvproof[mutate]', which pins mutmut 3.8.1)"
    return None


GENERATE = """
import json, os, sys
from pathlib import Path
from mutmut.__main__ import copy_src_dir, copy_also_copy_files, setup_source_paths, create_mutants
from mutmut.mutation.data import SourceFileMutationData
from mutmut.utils.file_utils import walk_mutatable_files
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(int(sys.argv[1]))
names = {}
for path in walk_mutatable_files():
    m = SourceFileMutationData(path=path); m.load(); names[str(path)] = sorted(m.exit_code_by_key)
print("KVPROOF-NAMES " + json.dumps(names))
"""
"""The generation step of ``mutmut run`` (mutmut 3.8.1's own functions), then every mutant name by file."""

DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
print("KVPROOF-DIFFS " + json.dumps({name: get_diff_for_mutant(name) for name in sys.argv[1:]}))
"""


def run_child(cmd: Sequence[str], cwd: Path, log: Path, env: dict[str, str], timeout: float | None) -> tuple[int, str]:
    """Run ``cmd`` in its own guarded process group, output appended to ``log``; kill the group whatever happens."""
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd[:6])}{' ...' if len(cmd) > 6 else ''}\n")
        out.flush()
        proc = spawn_guarded(list(cmd), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise MutateTimeout(f"{cmd[2] if len(cmd) > 2 else cmd[0]} ran past {timeout:.0f} s; see {log}") from None
        finally:
            GUARD.kill(proc, grace=2.0)  # the leader has ended or is ended now; its workers go with the group
    return rc, log.read_text()


def marked_json(text: str, marker: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith(marker + " "):
            return json.loads(line[len(marker) + 1 :])
    raise MutateError(f"mutmut's helper printed no {marker} line")


def run_failure(rc: int, text: str, log: Path) -> str:
    """The message for a mutmut run that failed: its last 15 lines, each cut at 300 characters (mutmut's last
    line can be a pytest command line of thousands of test ids), and, for pytest's usage error in mutmut's
    clean run, the likely cause."""
    lines = [line if len(line) <= 300 else f"{line[:300]} ... ({len(line)} characters)" for line in text.splitlines()[-15:]]
    why = ""
    if "BadTestExecutionCommandsException" in text:
        why = (
            "; pytest ended mutmut's clean run with a usage error (exit 4), which mostly means a test its stats pass "
            "recorded was not found when collected a second time in the same process: a test id pytest escapes "
            "again (keep explicit ids in printable ASCII without backslashes; docs/mutation.md, 'Test ids')"
        )
    return f"mutmut run failed (exit {rc}){why}; see {log}; its last lines:\n" + "\n".join(lines)


@dataclass
class MutationRun:
    """What ``run_mutation`` did: the report, the workspace, the names run, and the seconds it took."""

    report: Report
    workspace: ws.Workspace
    names: list[str]
    seconds: float
    log: Path
    generated: list[str] | None = None  # the shard's mutant names, when they were generated first (a shard, or ``only``)


def child_env(workspace: ws.Workspace) -> dict[str, str]:
    env = dict(os.environ)
    env[TTD_FILE_ENV] = str(workspace.ttd_file)
    env[COST_FILE_ENV] = str(workspace.cost_file)
    env.setdefault("KVPROOF_PROFILE", "ci")  # the suite's deterministic profile, whatever the caller's shell says
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_mutation(
    root: Path,
    targets: Sequence[MutationTarget],
    shard: Shard = WHOLE,
    max_children: int = 1,
    equivalents: Sequence[Equivalent] = (),
    timeout: float | None = None,
    work: Path | None = None,
    pytest_args: Sequence[str] = (),
    say: Callable[[str], None] = lambda _: None,
    only: Callable[[str], bool] | None = None,
) -> MutationRun:
    """Mutate ``targets`` in a fresh workspace and judge them (see the module's docstring).

    ``only``: judge just the shard's mutants it accepts (``kvproof mutate --rejudge``), the rest not at all.
    """
    why = mutmut_unavailable()
    if why:
        raise MutateError(why)
    started = time.monotonic()
    try:
        workspace = ws.build(root, targets, pytest_args, work)
    except OSError as exc:  # another run is writing there, or the folder cannot be replaced
        raise MutateError(
            f"cannot build the workspace {work or root / ws.WORK_ROOT} ({exc}); is another kvproof mutate "
            "of this profile and shard running? One run at a time per workspace"
        ) from None
    log = workspace.path / "mutmut.log"
    env = child_env(workspace)
    python = sys.executable
    deadline = None if timeout is None else started + timeout

    def left() -> float | None:
        return None if deadline is None else max(1.0, deadline - time.monotonic())

    names: list[str] = []
    generated = None
    if not shard.whole or only is not None:
        say(f"generating mutants to pick {'shard ' + str(shard) if not shard.whole else 'the mutants to judge'}")
        rc, text = run_child([python, "-c", GENERATE, str(max_children)], workspace.path, log, env, left())
        if rc != 0:
            raise MutateError(f"mutmut's mutant generation failed (exit {rc}); see {log}")
        generated = sharded_names((n for file in marked_json(text, "KVPROOF-NAMES").values() for n in file), shard)
        names = [n for n in generated if only is None or only(n)]
        if not names:
            return MutationRun(Report([]), workspace, [], time.monotonic() - started, log, generated)
    say(f"mutmut run in {workspace.path} ({len(names) if names else 'all'} mutants, {max_children} children; log {log})")
    stopped = None
    try:
        rc, text = run_child(
            [python, "-m", "mutmut", "run", "--max-children", str(max_children), *names], workspace.path, log, env, left()
        )
    except MutateTimeout as exc:
        stopped = str(exc)  # what mutmut had judged stands; the rest reads "not checked" and fails the run
    else:
        if rc != 0:
            raise MutateError(run_failure(rc, text, log))
    mutants = read_results(workspace, root, set(names) if names else None)
    join_ttd(mutants, read_ttd(workspace.ttd_file))
    shown = [m.name for m in mutants if m.status in (SURVIVED, NO_TESTS)]  # survivors and gaps are printed with their diffs
    valid, stale = split_equivalents(equivalents, {m.name: m.function_hash for m in mutants})
    for m in mutants:
        m.equivalent = valid.get(m.name)
    if shown:
        rc, text = run_child([python, "-c", DIFFS, *shown], workspace.path, log, env, None if stopped else left())
        diffs = marked_json(text, "KVPROOF-DIFFS") if rc == 0 else {}
        for m in mutants:
            m.diff = diffs.get(m.name, "") or m.diff
    return MutationRun(
        Report(mutants, stale=stale, stopped=stopped), workspace, names, time.monotonic() - started, log, generated
    )


def groups_of(targets: Sequence[MutationTarget]) -> list[tuple[MutationTarget, ...]]:
    """The targets that share one test list, a group per distinct list, in the order first named."""
    groups: dict[tuple[str, ...], list[MutationTarget]] = {}
    for target in targets:
        groups.setdefault(target.tests, []).append(target)
    return [tuple(group) for group in groups.values()]


@dataclass
class GroupedRun:
    """``run_groups``'s result: one ``MutationRun`` per group, their reports joined, and the whole call's seconds."""

    runs: list[MutationRun]
    report: Report
    seconds: float
    carried: int = 0  # verdicts taken over from an earlier report (``rejudge``), not judged in this run


def run_groups(
    root: Path,
    targets: Sequence[MutationTarget],
    shard: Shard = WHOLE,
    max_children: int = 1,
    equivalents: Sequence[Equivalent] = (),
    timeout: float | None = None,
    work: Path | None = None,
    pytest_args: Sequence[str] = (),
    say: Callable[[str], None] = lambda _: None,
    only: Callable[[str], bool] | None = None,
) -> GroupedRun:
    """``run_mutation`` once per group of targets sharing a test list (``groups_of``), in workspaces ``work/group-I``.

    A module's mutants are judged by its own list only, and mutmut's traced first pass covers one
    list at a time. ``timeout`` bounds the whole call: a group the limit leaves no time for is not
    run, and the joined report says it was stopped (the modules it names are not judged), so the
    run fails rather than reading as complete. The shard applies in every group, so the shards of
    a matrix still partition every mutant of the profile.
    """
    started = time.monotonic()
    base = work or root / ws.WORK_ROOT / "work"
    groups = groups_of(targets)
    runs: list[MutationRun] = []
    stopped: list[str] = []
    for i, group in enumerate(groups, 1):
        left = None if timeout is None else timeout - (time.monotonic() - started)
        if left is not None and left < 1.0:
            skipped = [t.module for g in groups[i - 1 :] for t in g]
            stopped.append(f"the time limit left no time for {len(skipped)} modules ({', '.join(skipped)})")
            break
        say(f"group {i}/{len(groups)}: {', '.join(t.module for t in group)} judged by {len(group[0].tests)} test files")
        run = run_mutation(root, group, shard, max_children, equivalents, left, base / f"group-{i}", pytest_args, say, only)
        runs.append(run)
        if run.report.stopped:
            stopped.append(run.report.stopped)
    mutants = [m for run in runs for m in run.report.mutants]
    stale = [e for run in runs for e in run.report.stale]
    report = Report(mutants, stale=stale, stopped="; ".join(stopped) or None)
    return GroupedRun(runs, report, time.monotonic() - started)


def carried_verdicts(earlier: Report, root: Path) -> dict[str, Mutant]:
    """The verdicts of an earlier report that a rejudge keeps: killed or timed out, in a function whose source
    text is unchanged since (its hash, ``equivalents.function_hash``). Everything else is judged again: the
    survivors, the gaps, the mutants left unchecked, and every mutant of an edited function."""
    return {
        m.name: m
        for m in earlier.mutants
        if m.status in (KILLED, TIMEOUT) and m.function_hash is not None and m.function_hash == function_hash(root, m.name)
    }


def rejudge(
    root: Path,
    targets: Sequence[MutationTarget],
    earlier: Report,
    shard: Shard = WHOLE,
    max_children: int = 1,
    equivalents: Sequence[Equivalent] = (),
    timeout: float | None = None,
    work: Path | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> GroupedRun:
    """Judge again what ``earlier`` did not settle (``carried_verdicts``), and report the whole: the carried
    verdicts of the mutants the code still has, and the new ones.

    The loop a maintainer runs after strengthening the tests for a report's survivors: it costs the
    survivors' time, not the whole run's. A carried kill assumes the tests that killed it still run
    (tests added since only kill more); a full run stays the verdict of record, and the report says
    how many verdicts were carried.
    """
    carried = carried_verdicts(earlier, root)
    say(f"carrying {len(carried)} verdicts (killed or timed out, function unchanged) of {len(earlier.mutants)}")
    run = run_groups(root, targets, shard, max_children, equivalents, timeout, work, (), say, lambda n: n not in carried)
    generated = {n for r in run.runs for n in (r.generated or ())}
    kept = [m for name, m in carried.items() if name in generated]
    run.report = Report(kept + run.report.mutants, stale=run.report.stale, stopped=run.report.stopped)
    run.carried = len(kept)
    return run


def read_results(workspace: ws.Workspace, root: Path, only: set[str] | None) -> list[Mutant]:
    """Every mutant of the workspace's targets from mutmut's ``.meta`` files (only the names in ``only``, if given)."""
    mutants = []
    for target in workspace.targets:
        meta_path = workspace.meta_of(target)
        if not meta_path.is_file():
            raise MutateError(f"mutmut wrote no results for {target.module} (no {meta_path})")
        meta = json.loads(meta_path.read_text())
        durations = meta.get("durations_by_key", {})
        for name, code in meta["exit_code_by_key"].items():
            if only is not None and name not in only:
                continue
            seconds = durations.get(name)
            mutants.append(
                Mutant(
                    name,
                    target.module,
                    code,
                    None if seconds is None else round(float(seconds), 4),
                    function_hash=function_hash(root, name),
                )
            )
    return mutants


def read_ttd(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


__all__ = [
    "GroupedRun",
    "MutateError",
    "MutationRun",
    "carried_verdicts",
    "groups_of",
    "mutmut_unavailable",
    "rejudge",
    "run_groups",
    "run_mutation",
    "status_of",
]
