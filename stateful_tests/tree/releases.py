"""Every release of ``ai-dynamo-runtime`` through the gate: the table of docs/releases.md.

``survey`` fetches each release's wheel from the package index (``pip download --no-deps``,
the only network it needs), unpacks it into a throwaway folder, and runs
``kvproof check --target T`` in a child process whose ``PYTHONPATH`` puts that copy of
``dynamo`` ahead of the environment's, so the child detects the release, picks its rule
set (``spec.rules``) and judges it. ``T`` is each **component** the release ships
(``COMPONENTS``): the single-threaded tree (``dynamo``, every release), the standalone indexer's
concurrent tree (``dynamo-indexer``, from 1.1.0) and the selection service's (``dynamo-selection``,
from 1.4.0, the first with peer recovery). Each child runs in its own process group and is killed
with its group on timeout or interrupt. The verdict of a release is one of:

- ``pass``: every row passes, possibly naming what it tolerated (known findings, variants);
- ``upstream bug``: a row fails with a contract difference or a contract-machine
  counterexample (over-credit, unexplained undercount, a store under an unheld parent), or the
  target's process crashed, ran out of memory or hung (``harness.isolation``: the row's
  ``FINDING``); ``KNOWN_BUGS`` names the upstream change where kvproof knows it;
- ``differs``: a row fails with a difference that no variant explains and that is not a
  contract violation (run ``kvproof explain`` on it);
- ``not checkable``: the release lacks what the gate needs (rows skipped with the reason).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...spec.rules import RULE_SETS, rule_set_for, version_key
from ..harness.process_guard import GUARD, spawn_guarded

RELEASES = (
    "0.6.0",
    "0.6.1",
    "0.7.0",
    "0.7.0.post1",
    "0.7.1",
    "0.8.0",
    "0.8.1",
    "0.8.1.post1",
    "0.8.1.post2",
    "0.8.1.post3",
    "0.9.0",
    "0.9.1",
    "1.0.0",
    "1.0.1",
    "1.0.2",
    "1.1.0",
    "1.1.1",
    "1.2.0.post1",
    "1.2.1",
    "1.3.0.post1",
    "1.3.1",
    "1.4.0",
    "1.4.1",
    "1.4.2",
    "1.5.0",
    "1.5.1",
    "1.6.0",
    "1.6.1",
)
"""The releases the survey covers by default: 0.6.0 (the last one without a dump, to show why the
older ones cannot be checked) and every release from 0.6.1 to 1.6.1 on the package index."""


@dataclass(frozen=True)
class Component:
    """One of Dynamo's trees the survey checks: the target that reaches it, and the first release that ships it."""

    name: str
    target: str
    first: str
    rules: str  # the spec.rules component whose rule sets judge it


COMPONENTS = (
    Component("tree", "dynamo", "0.1.1", "tree"),
    Component("indexer", "dynamo-indexer", "1.1.0", "concurrent"),
    Component("selection", "dynamo-selection", "1.4.0", "concurrent"),
)
"""Dynamo's trees, as the survey reaches them (docs/releases.md)."""


@dataclass(frozen=True)
class KnownBug:
    """An upstream bug kvproof finds, with the releases it spans, the component, and where it came from and went."""

    name: str
    first: str
    last: str
    statement: str
    upstream: str
    component: str = "tree"  # a spec.rules component: "tree" or "concurrent"


KNOWN_BUGS = (
    KnownBug(
        "per-block over-credit",
        "0.6.1",
        "0.9.1",
        "the per-block walk credits a rank for blocks below one it no longer holds (B holds [x y], evicts x: a "
        "query [x y] still credits B with 1)",
        "fixed by the walk of ai-dynamo/dynamo PR #5785 (Flash Indexer, 1.0.0), which brought its own over-credit",
    ),
    KnownBug(
        "equal-size intersection over-credit",
        "1.0.0",
        "1.2.1",
        "the walk skips intersecting the active ranks with a child's holders when the two sets have the same size, "
        "so a rank that holds only x is credited [x y] after another rank evicts x (the mutant "
        "WalkSkipsEqualSizedIntersection)",
        "introduced by ai-dynamo/dynamo PR #5785 (Flash Indexer, 1.0.0); gone with the compressed tree of PR #10542 (1.3.0)",
    ),
    KnownBug(
        "unbounded dump",
        "0.6.1",
        "1.2.1",
        "a store that reuses a node the worker holds for the same block hash can link a cycle, and "
        "dump_tree_as_events follows it until allocation fails (a finding of the isolated target: its process "
        "runs out of memory, kvproof does not)",
        "two-step cycle: store [(1, 101), (2, 102)], then [(3, 101)] under 102; gone with the compressed tree of "
        "ai-dynamo/dynamo PR #10542 (1.3.0)",
    ),
    KnownBug(
        "concurrent equal-size over-credit (F10)",
        "1.1.0",
        "1.6.1",
        "the concurrent tree's walk skips intersecting the active ranks with a child's holders when the two sets "
        "have the same size, so a rank is carried into a child it does not hold (docs/dynamo-findings.md F10)",
        "in ConcurrentRadixTreeCompressed since ai-dynamo/dynamo PR #7459; fixed on main between the nightlies "
        "1.6.0.dev20261013 and 1.6.0.dev20261014 (pinned by the upstream test "
        "equal_sized_coverage_after_head_first_eviction_scores_exactly); in no release on the index",
        component="concurrent",
    ),
)


def bugs_of(version: str, component: str = "tree") -> list[KnownBug]:
    key = version_key(version)
    return [b for b in KNOWN_BUGS if b.component == component and version_key(b.first) <= key <= version_key(b.last)]


def components_of(version: str, wanted: tuple[str, ...] | None = None) -> list[Component]:
    """The components release ``version`` ships, of those ``wanted`` (all by default)."""
    key = version_key(version)
    return [c for c in COMPONENTS if (wanted is None or c.name in wanted) and version_key(c.first) <= key]


@dataclass
class ReleaseResult:
    version: str
    verdict: str
    rules: str
    rows: list[dict] = field(default_factory=list)
    note: str = ""
    seconds: float = 0.0
    command: str = ""
    component: str = "tree"

    def failing(self) -> list[dict]:
        return [r for r in self.rows if r["result"] == "FAIL"]

    def findings(self) -> list[str]:
        """The target's failures as a process (a crash, memory, a hang), each as its row reported it, first line only."""
        return [
            f"{r['detail'].splitlines()[0].split('; its last words')[0][:240]} ({r['name']})"
            for r in self.failing()
            if r["detail"].startswith("FINDING [")
        ]

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "component": self.component,
            "verdict": self.verdict,
            "rules": self.rules,
            "note": self.note,
            "seconds": round(self.seconds, 1),
            "command": self.command,
            "rows": self.rows,
        }


def fetch(version: str, cache: Path) -> Path:
    """Unpack release ``version`` into ``cache/site/<version>`` (downloading its wheel once); return that folder."""
    site = cache / "site" / version
    if (site / "dynamo").is_dir():
        return site
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = list(wheels.glob(f"ai_dynamo_runtime-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), f"ai-dynamo-runtime=={version}"],
            check=True,
            capture_output=True,
            text=True,
        )
        found = list(wheels.glob(f"ai_dynamo_runtime-{version}-*.whl"))
    if not found:
        raise RuntimeError(f"pip downloaded no wheel for ai-dynamo-runtime=={version} that fits this interpreter")
    site.parent.mkdir(parents=True, exist_ok=True)
    unpacking = tempfile.mkdtemp(dir=site.parent)  # unpacked aside, then renamed: a half-unpacked site never exists
    try:
        with zipfile.ZipFile(found[0]) as wheel:
            wheel.extractall(unpacking)
        os.replace(unpacking, site)
    except BaseException:
        shutil.rmtree(unpacking, ignore_errors=True)
        raise
    return site


def _run_child(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run ``cmd`` guarded (``harness.process_guard``: its own process group, killed on timeout, on
    SIGTERM/SIGINT, at exit, and by the kernel if kvproof dies). Returns ``(rc or None on timeout, output)``."""
    proc = spawn_guarded(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc: int | None = None
    try:
        output, _ = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        GUARD.kill(proc, grace=1.0)
        output, _ = proc.communicate()
    finally:  # on every exit path: what is left of the group is stopped, and the guard forgets it
        GUARD.kill(proc, grace=1.0)
    return rc, output


def verdict_of(rows: list[dict]) -> str:
    """Classify a release by its gate rows (see the module docstring)."""
    failing = [r for r in rows if r["result"] == "FAIL"]
    if any(_breaks_contract(r) for r in failing):
        return "upstream bug"
    if failing:
        return "differs"
    if any(r["result"] == "SKIP" for r in rows):
        return "not checkable"
    return "pass"


def _breaks_contract(row: dict) -> bool:
    """A failing row shows a contract violation (the contract machine's, or a conformance difference of that kind),
    or the target failed as a process (a crash, memory, a hang: ``FINDING`` in the row)."""
    import re

    said = row["detail"]
    if said.startswith("FINDING ["):
        return True
    if "[contract]" in said or (
        row["layer"] == "contract" and any(word in said for word in ("overcount", "undercount", "over-credit", "does not hold"))
    ):
        return True
    counted = re.search(r"contract=(\d+)", row["detail"])
    return bool(counted and int(counted.group(1)) > 0)


def survey(
    versions: list[str],
    cache: Path,
    profile: str = "quick",
    timeout: float = 600.0,
    on_result: Callable[[ReleaseResult], None] | None = None,
    components: tuple[str, ...] | None = None,
) -> list[ReleaseResult]:
    """Run the gate on every component of every release in ``versions``; return one result per (release, component)."""
    results = []
    for version in versions:
        for component in components_of(version, components):
            result = _survey_one(version, component, cache, profile, timeout)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def _survey_one(version: str, component: Component, cache: Path, profile: str, timeout: float) -> ReleaseResult:
    import time

    started = time.perf_counter()
    rules = rule_set_for(version, component.rules)
    rules_name = rules.name if rules else "?"
    target = component.target
    command = f"PYTHONPATH={cache}/site/{version} kvproof check --target {target} --profile {profile}"
    try:
        site = fetch(version, cache)
    except (subprocess.CalledProcessError, RuntimeError, OSError, zipfile.BadZipFile) as exc:
        detail = (
            exc.stderr.strip().splitlines()[-1] if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else str(exc)
        )
        result = ReleaseResult(version, "not checkable", rules_name, note=f"cannot fetch: {detail}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "gate.json"
            env = dict(
                os.environ,
                PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                DYN_LOG="error",
            )
            rc, output = _run_child(
                [
                    sys.executable,
                    "-m",
                    "kvproof",
                    "check",
                    "--target",
                    target,
                    "--profile",
                    profile,
                    "--family",
                    "tree",
                    "--json",
                    str(report),
                ],
                env,
                timeout,
            )
            if rc is None:
                result = ReleaseResult(version, "not checkable", rules_name, note=f"the gate ran past {timeout:.0f} s")
            elif not report.exists():
                tail = output.strip().splitlines()[-1] if output.strip() else f"exit {rc}"
                result = ReleaseResult(version, "not checkable", rules_name, note=f"no report: {tail}")
            else:
                body = json.loads(report.read_text())
                rows = body["rows"]
                result = ReleaseResult(version, verdict_of(rows), body.get("rules", "?"), rows, note=body.get("rules_note", ""))
    result.seconds = time.perf_counter() - started
    result.command = command
    result.component = component.name
    return result


def _row_cell(row: dict) -> str:
    if row["result"] == "pass":
        return "pass" + (f" (known: {', '.join(row['known'])})" if row.get("known") else "")
    return row["result"]


def _why(result: ReleaseResult) -> str:
    """The table's explanation column: what differs and why, from the rows and kvproof's knowledge."""
    parts = []
    rules = RULE_SETS.get(result.rules)
    if rules is not None and rules.variants:
        parts.append("intended: " + "; ".join(f"{v} ({v.upstream})" for v in sorted(rules.variants)))
    component = next(c for c in COMPONENTS if c.name == result.component)
    for bug in bugs_of(result.version, component.rules):
        parts.append(f"upstream bug: {bug.name}: {bug.statement}; {bug.upstream}")
    for row in result.rows:
        if row["result"] == "SKIP":
            parts.append(f"kvproof limitation: {row['name']} skipped: {row['detail']}")
        elif row["result"] == "FAIL":
            first = row["detail"].splitlines()[0]
            parts.append(f"{row['name']} fails: {first[:160]}")
    if result.note and not result.rows:
        parts.append(result.note)
    return "<br>".join(p.replace("|", "\\|") for p in parts) or "exact (the reference as written)"


def markdown(results: list[ReleaseResult], command: str) -> str:
    """The table of docs/releases.md: one row per release."""
    names = []
    for r in results:
        for row in r.rows:
            if row["name"] not in names:
                names.append(row["name"])
    short = {
        "node-rule laws": "laws",
        "observed Dynamo behaviours": "vectors",
        "state machine vs contract": "contract",
        "dump rebuilds the tree": "dump",
        "bad input is rejected, harmless": "bad input",
        "differential vs Dynamo": "conformance",
    }
    header = ["release", "component", "rule set", "verdict", *[short.get(n, n) for n in names], "what differs, and why"]
    lines = [f"Generated by `{command}`.", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    order = [c.name for c in COMPONENTS]
    for r in sorted(results, key=lambda x: (version_key(x.version), order.index(x.component))):
        by_name = {row["name"]: row for row in r.rows}
        cells = [
            r.version,
            r.component,
            r.rules,
            f"**{r.verdict}**",
            *[_row_cell(by_name[n]) if n in by_name else "—" for n in names],
            _why(r),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- releases:begin -->", "<!-- releases:end -->"


def write_between_markers(path: Path, table: str) -> Path:
    """Write ``table`` into ``path`` between the ``releases`` markers (the prose around it is kept),
    or as the whole file when it has no markers."""
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        path.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")
    else:
        path.write_text(table)
    return path


@dataclass
class ReleaseSurvey:
    """``kvproof releases``: every release's verdict (said as each finishes), the table written, the counts."""

    profile: str
    results: list[ReleaseResult]
    wrote: str = ""
    kind = "releases"
    skipped = ""

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.results) for v in ("pass", "upstream bug", "differs", "not checkable")}

    @property
    def ok(self) -> bool:
        """No difference nobody explains, and at least one release checked (no index, a typo: nothing checkable)."""
        counts = self.counts()
        return not counts["differs"] and counts["not checkable"] != len(self.results)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        if self.wrote:
            say(f"wrote {self.wrote}")

    def summary_line(self) -> str:
        return f"releases: {len(self.results)} releases: " + ", ".join(f"{n} {v}" for v, n in self.counts().items())

    def to_json(self) -> dict:
        return {"profile": self.profile, "releases": [r.to_json() for r in self.results]}


def release_line(r: ReleaseResult) -> list[str]:
    """What a release's run says as it finishes: its verdict row, then each finding named."""
    failing = ", ".join(row["name"] for row in r.failing())
    lines = [
        f"{r.version:<12} {r.component:<10} {r.rules:<22} {r.verdict:<14} {r.seconds:5.0f} s"
        + (f"  failing: {failing}" if failing else "")
        + (f"  ({r.note})" if r.note and not r.rows else "")
    ]
    return lines + [f"{'':<12} {r.component:<10} {finding}" for finding in r.findings()]


def run_releases(
    versions: tuple[str, ...],
    cache: Path,
    profile: str | None,
    timeout: float,
    markdown_path: str | None,
    components: tuple[str, ...],
    say: Callable[[str], None],
) -> ReleaseSurvey:
    """Survey ``versions`` (default: every release kvproof knows) under the gate ``profile`` (default: $KVPROOF_PROFILE or ci); write the
    table of docs/releases.md to ``markdown_path``. A version that is not PEP 440 is refused."""
    from packaging.version import InvalidVersion

    from ..harness.errors import CampaignInputError
    from ..harness.profiles import profile_choice

    chosen = list(versions) or list(RELEASES)
    for version in chosen:
        try:
            version_key(version)
        except InvalidVersion:
            raise CampaignInputError(f"--version: {version!r} is not a release (PEP 440), e.g. 1.6.1 or 0.8.1.post3") from None
    profile_name = profile_choice(profile)
    command = (
        "kvproof releases"
        + "".join(f" --version {v}" for v in versions)
        + f" --profile {profile_name}"
        + "".join(f" --component {c}" for c in components)
    )

    def said(result: ReleaseResult) -> None:
        for line in release_line(result):
            say(line)

    results = survey(chosen, cache.resolve(), profile_name, timeout, said, components or None)
    report = ReleaseSurvey(profile_name, results)
    if markdown_path:
        report.wrote = str(write_between_markers(Path(markdown_path), markdown(results, command)))
    return report
