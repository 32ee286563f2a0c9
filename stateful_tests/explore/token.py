"""Schedule tokens and schedule files: how a failing interleaving is printed, saved and replayed.

A token is one shell-safe word, ``SCENARIO/TARGET/STRATEGY/DECISIONS``:

- ``SCENARIO``: a name from ``scenarios.SCENARIOS`` (``fanout-vs-split``);
- ``TARGET``: ``impl`` (the embedded implementation), a mutant's name (``NoVersionCheck``) or a
  ``module:Factory`` spec;
- ``STRATEGY``: what found it (``pct.d3.s1#17``: PCT of depth 3, seed 1, schedule 17), for the record;
- ``DECISIONS``: the thread chosen at each decision, threads as letters (``a`` is thread 0),
  runs compressed by a count (``a3b2c`` is ``a a a b b c``); ``-`` when empty.

``kvproof replay schedule TOKEN`` runs it again with ``replay.Replay`` (past the recorded decisions
nothing preempts, so a token is also valid cut short). A workload that a seed cannot name (one
Hypothesis drew) travels in a schedule *file* instead: JSON with the same fields plus
``workload``, written atomically (a temporary file, then a rename) so an interrupted run never
leaves half a file. ``regressions/`` beside this module holds schedule files that every run
replays first.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..harness.files import write_json_atomically

FORMAT = "kvproof-schedule/1"
_RUN = re.compile(r"([a-z])(\d*)")


class TokenError(ValueError):
    """A token or schedule file that does not parse; the message says which part and why."""


def encode_decisions(decisions: list[int]) -> str:
    """Return the letters-and-counts form of ``decisions`` (``-`` when empty)."""
    if not decisions:
        return "-"
    out, i = [], 0
    while i < len(decisions):
        j = i
        while j < len(decisions) and decisions[j] == decisions[i]:
            j += 1
        thread = decisions[i]
        if not 0 <= thread < 26:
            raise TokenError(f"thread {thread} has no letter (at most 26 threads)")
        out.append(chr(ord("a") + thread) + (str(j - i) if j - i > 1 else ""))
        i = j
    return "".join(out)


def decode_decisions(text: str) -> list[int]:
    """Invert ``encode_decisions``."""
    if text in ("", "-"):
        return []
    out: list[int] = []
    pos = 0
    for m in _RUN.finditer(text):
        if m.start() != pos:
            raise TokenError(f"decisions {text!r}: unexpected {text[pos : m.start()]!r} at {pos}")
        out.extend([ord(m.group(1)) - ord("a")] * int(m.group(2) or 1))
        pos = m.end()
    if pos != len(text):
        raise TokenError(f"decisions {text!r}: unexpected {text[pos:]!r} at {pos}")
    return out


@dataclass(frozen=True)
class Schedule:
    """One schedule of one scenario on one target (a token, or a file when it has a workload)."""

    scenario: str
    target: str
    strategy: str
    decisions: tuple[int, ...]
    workload: tuple[Any, ...] | None = None
    kind: str = ""  # what the schedule showed when it was saved (the failure's kind)
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def token(self) -> str:
        if self.workload is not None:
            raise TokenError("a schedule with a drawn workload has no token: save it as a file (save_schedule)")
        for part, value in (("scenario", self.scenario), ("target", self.target), ("strategy", self.strategy)):
            if not value or "/" in value or any(c.isspace() for c in value):
                raise TokenError(f"{part} {value!r} cannot go in a token (empty, or with '/' or spaces)")
        return f"{self.scenario}/{self.target}/{self.strategy}/{encode_decisions(list(self.decisions))}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["decisions"] = encode_decisions(list(self.decisions))
        data["workload"] = None if self.workload is None else list(self.workload)
        return {"format": FORMAT, **data}


def parse_token(text: str) -> Schedule:
    """Return the schedule a token names (``TokenError`` on a malformed one)."""
    parts = text.strip().split("/")
    if len(parts) != 4:
        raise TokenError(f"a schedule token has 4 parts SCENARIO/TARGET/STRATEGY/DECISIONS, {text!r} has {len(parts)}")
    scenario, target, strategy, decisions = parts
    return Schedule(scenario, target, strategy, tuple(decode_decisions(decisions)))


def looks_like_token(text: str) -> bool:
    """True when ``text`` is a token rather than a path (a token has 3 slashes and is not a file)."""
    return text.count("/") == 3 and not os.path.exists(text) and not text.endswith((".json", ".jsonl"))


def from_json(data: Any) -> Schedule:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TokenError(f'not a schedule file (no "format": {FORMAT!r})')
    try:
        workload = data.get("workload")
        return Schedule(
            str(data["scenario"]),
            str(data["target"]),
            str(data["strategy"]),
            tuple(decode_decisions(str(data["decisions"]))),
            None if workload is None else _freeze(workload),
            str(data.get("kind", "")),
            str(data.get("detail", "")),
        )
    except KeyError as missing:
        raise TokenError(f"schedule file lacks {missing}") from None


def _freeze(value: Any) -> Any:
    """JSON lists back to the tuples a workload is made of."""
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def load_schedule(path: str | Path) -> Schedule:
    try:
        return from_json(json.loads(Path(path).read_text()))
    except (OSError, json.JSONDecodeError) as exc:
        raise TokenError(f"{path}: {exc}") from None


def save_schedule(schedule: Schedule, folder: str | Path, name: str | None = None) -> Path:
    """Write ``schedule`` into ``folder`` atomically; return the file's path."""
    stem = name or f"{schedule.scenario}-{schedule.target.replace(':', '_')}-{abs(hash(schedule.decisions)) % 10**8:08d}"
    return write_json_atomically(Path(folder) / f"{stem}.json", schedule.to_json())


REGRESSIONS = Path(__file__).parent / "regressions"


def regression_files(folder: Path = REGRESSIONS) -> list[Path]:
    """Return the saved schedules that every run replays, in name order."""
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
