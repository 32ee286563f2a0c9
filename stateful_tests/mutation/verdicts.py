"""The verdicts of record: one compact file per module group, overwritten in place by each verdict run.

``kvproof mutate --json F`` writes a whole report (pretty JSON, every mutant over some ten lines, the
score tables repeated): a CI artifact, never committed. What the repository keeps of a run is its
*verdict of record*, ``docs/mutation-runs/<group>.jsonl.gz``: gzip-compressed JSON lines, the first
line the run's header (profile, paths, shard, goals, what stopped it, the stale equivalents, and where
it came from), then one line per mutant with what ``scores.Mutant.from_json`` reads (its verdict is
recomputed from the exit code and the reviewed equivalence, as for a report). The group is named from
the run's paths (``spec``, ``impl-radix_tree-poison``), so the next run of the same modules overwrites
it; the predecessors are in git history, which the header names as ``<commit>:<path>``:

- ``report``: the report this verdict was recorded from (``<commit>:<path>`` when that file was
  committed there, else the path as given);
- ``rejudged_from``: the earlier verdict the run was a ``--rejudge`` of (the same form; ``None`` for a
  whole run).

``scores.read_shard_run`` reads a verdict as it reads a report, so ``kvproof mutate --merge`` and
``--rejudge`` take these files directly, and the scores of ``docs/mutation.md`` are reproduced from them
(``tests/test_verdicts.py``). Record a run with::

    python -m kvproof.stateful_tests.mutation.verdicts REPORT.json [REPORT.json ...]

Source: docs/sources.md#kvproof-no-machine-output.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = Path("docs/mutation-runs")
SUFFIX = ".jsonl.gz"
FORMAT = "kvproof.mutate-verdict/1"

HEADER_KEYS = (
    "schema",
    "profile",
    "paths",
    "shard",
    "seconds",
    "max_children",
    "carried",
    "stopped",
    "goals",
    "median_ttd_s",
    "p90_ttd_s",
    "stale_equivalents",
)
"""What a verdict keeps of a report's top level; the tables and lists repeated from the mutants are recomputed."""

MUTANT_KEYS = ("name", "module", "exit_code", "seconds", "ttd_s", "first_fail", "function_hash", "diff", "equivalent_reason")
"""What a verdict keeps of each mutant (``status`` is recomputed; absent and empty fields are left out)."""


def group_of(paths: Iterable[str]) -> str:
    """The group a run's ``--paths`` name, in any order: ``spec``; ``reference-radix_tree``; ``impl-indexer-lane-node-sync``."""
    paths = list(paths)
    layers = {path.partition("/")[0] for path in paths}
    if len(layers) != 1:
        raise ValueError(f"a verdict is of the paths of one layer, not {paths}")
    stems = sorted({Path(module).stem.lstrip("_") for path in paths if (module := path.partition("/")[2])})
    return "-".join([layers.pop(), *stems])


def is_verdict(path: str | Path) -> bool:
    return str(path).endswith(SUFFIX)


def provenance(path: str | None, root: Path = ROOT) -> str | None:
    """``<commit>:<path>`` for a file committed at ``HEAD`` of ``root`` (as it is there), else ``path`` as given."""
    if not path:
        return None
    try:
        rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path
    git = ["git", "-C", str(root)]
    try:
        commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run([*git, "cat-file", "-e", f"{commit}:{rel}"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return rel
    return f"{commit}:{rel}"


def verdict_lines(report: Mapping[str, Any], source: str | None, rejudged_from: str | None) -> list[str]:
    """The verdict of ``report`` (a ``kvproof mutate --json`` body) as JSON lines: the header, then each mutant."""
    header = {key: report.get(key) for key in HEADER_KEYS}
    header.update(format=FORMAT, group=group_of(report["paths"]), report=source, rejudged_from=rejudged_from)
    lines = [json.dumps(header, sort_keys=True, separators=(",", ":"))]
    for m in sorted(report["mutants"], key=lambda m: m["name"]):
        kept = {key: m[key] for key in MUTANT_KEYS if m.get(key) not in (None, "")}
        lines.append(json.dumps(kept, sort_keys=True, separators=(",", ":")))
    return lines


def write_verdict(lines: Sequence[str], path: Path) -> None:
    """Write the lines gzip-compressed, without a timestamp, so the same verdict is the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as stream:
        stream.write(("\n".join(lines) + "\n").encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def read_verdict(path: str | Path) -> dict[str, Any]:
    """A verdict read back as a report body: its header, and ``mutants`` (``ValueError`` for anything else)."""
    try:
        text = gzip.decompress(Path(path).read_bytes()).decode()
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a readable verdict ({exc})") from None
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT:
        raise ValueError(f"not a verdict of format {FORMAT!r}")
    return {**lines[0], "mutants": lines[1:]}


def verdicts_of(layer: str, root: Path = ROOT) -> list[Path]:
    """The verdicts of record of ``layer``'s module groups, by name."""
    return sorted((root / VERDICTS).glob(f"{layer}*{SUFFIX}"))


def reports_of_record(root: Path = ROOT) -> dict[str, Any]:
    """Each layer's report (``scores.Report``) merged from its verdicts of record, as ``kvproof mutate --merge`` does."""
    from .profiles import LAYERS, layer_modules
    from .scores import merge_module_runs, merge_shard_runs, read_shard_run

    reports: dict[str, Any] = {}
    for layer in LAYERS:
        runs = [read_shard_run(path) for path in verdicts_of(layer, root)]
        if len(runs) == 1:
            reports[layer] = merge_shard_runs(runs)
        elif runs:
            reports[layer] = merge_module_runs(runs, {layer: layer_modules(root, layer)})
    return reports


def record(report_path: str | Path, root: Path = ROOT) -> Path:
    """Overwrite ``docs/mutation-runs/<group>.jsonl.gz`` with the verdict of a ``kvproof mutate --json`` report."""
    body = json.loads(Path(report_path).read_text())
    if body.get("schema") != "kvproof.mutate/1":
        raise ValueError(f"{report_path}: not a kvproof mutate report (schema {body.get('schema')!r})")
    lines = verdict_lines(body, provenance(str(report_path), root), provenance(body.get("rejudged_from"), root))
    out = root / VERDICTS / f"{group_of(body['paths'])}{SUFFIX}"
    write_verdict(lines, out)
    return out


def main(argv: Sequence[str]) -> int:
    if not argv or any(a.startswith("-") for a in argv):
        print("usage: python -m kvproof.stateful_tests.mutation.verdicts REPORT.json [REPORT.json ...]", file=sys.stderr)
        return 2
    for report in argv:
        print(f"recorded {report} as {record(report).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
