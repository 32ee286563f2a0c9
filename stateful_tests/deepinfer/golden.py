"""The chapter's printed lab outputs, verbatim, and the comparison of the spec's reports with them.

Every ``BOOK_*`` constant is copied from seed 002 (chapter 11) as printed: the lab 23 service
queue and capacity model, the lab 24 hit table, the lab 25 frontier and acceptance lines. The
spec renders each report from its rules (``lab23_report`` and so on); ``golden_problems`` lists
every line that differs. Nothing here computes a number: the numbers live in the book text.

Whitespace: the web edition's tables are reproduced character for character as they appear in
the seed text (single spaces between lab 25's columns, aligned columns in lab 24).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...spec.acceptance import lab25_report
from ...spec.capacity import lab23_capacity_report
from ...spec.hit_length import lab24_report
from ...spec.service_queue import lab23_report

BOOK_LAB23_SERVICE = """\
Assigned time units; four requests, two P and two D workers
local affinity: P ends [3, 5, 7, 9]; D ends [8, 10, 12, 14]
shared cache: P ends [3, 3, 5, 5]; D ends [8, 8, 12, 12]
shared, no hits: P ends [9, 9, 17, 17]; D ends [14, 14, 22, 22]
shared, slower handoff: P ends [3, 3, 5, 5]; D ends [10, 10, 14, 14]
affinity, slower handoff: P ends [3, 5, 7, 9]; D ends [10, 12, 14, 16]"""

BOOK_LAB23_CAPACITY = """\
Capacity model (GPU equivalents, not deployment sizes):
reused input fraction 0%: P=3, D=3
reused input fraction 75%: P=1, D=3"""

BOOK_LAB24 = """\
Assigned full block-prefix availability; columns count tokens
L     block hit L1   compute hit: SWA present / missing
128   0                 0 / 0
261   0                 0 / 0
262   128             128 / 0
390   256             256 / 128
902   768             768 / 640
1024  768             768 / 640
Checks: 69666 cases; bounds, alignment, backoff, monotonicity"""

BOOK_LAB25 = """\
Synthetic records: requests, steps/s, user tokens/s, tokens/s/GPU
 8 100 325.00 2600.00
16  90 292.50 4680.00
32  60 195.00 6240.00
48  35 113.75 5460.00
64  40 130.00 8320.00
Non-dominated request counts: [8, 16, 32, 64]
Mean accepted fraction 0.75: tau=3.250000
Conditional acceptance 0.75: tau=2.734375
Common axis shrink: 15.8654%
Published point, approximate: 246 / 3.25 = 75.69 steps/s
Implied throughput at R=64, CP=1: 15744 tokens/s/GPU
Checks: exact prefix expectation and common-scale frontier passed"""


@dataclass(frozen=True)
class Golden:
    name: str
    book: str
    render: Callable[[], list[str]]
    source: str


GOLDENS: tuple[Golden, ...] = (
    Golden("lab 23 service queue", BOOK_LAB23_SERVICE, lab23_report, "chapter 11 opening, results/23_service.txt"),
    Golden("lab 23 capacity model", BOOK_LAB23_CAPACITY, lab23_capacity_report, "§11.2.1, results/23_service.txt"),
    Golden("lab 24 hit lengths", BOOK_LAB24, lab24_report, "§11.4, results/24_cache_hits.txt"),
    Golden("lab 25 frontier and acceptance", BOOK_LAB25, lab25_report, "§11.6.1-§11.6.2, results/25_frontier.txt"),
)


def golden_problems(golden: Golden) -> tuple[int, list[str]]:
    """Return how many printed lines were compared and a message for each that the spec does not reproduce."""
    want = golden.book.splitlines()
    got = golden.render()
    problems = [f"{golden.name} line {i + 1}: book {w!r}, spec {g!r}" for i, (w, g) in enumerate(zip(want, got)) if w != g]
    if len(want) != len(got):
        problems.append(f"{golden.name}: book has {len(want)} lines, spec {len(got)}")
    return len(want), problems


@dataclass
class LabsRun:
    """``kvproof deepinfer-labs``: each lab's output as the spec computes it, with the lines that differ from the book."""

    results: list[tuple[Golden, int, list[str]]]  # the lab, lines compared, lines that differ
    kind = "deepinfer-labs"
    skipped = ""

    @property
    def ok(self) -> bool:
        return not any(problems for _, _, problems in self.results)

    def render(self, say: Callable[[str], None], table: Callable[..., None]) -> None:
        for golden, compared, problems in self.results:
            say(f"== {golden.name} ({golden.source}): {compared} lines, {len(problems)} differ")
            for line in golden.render():
                say(f"   {line}")
            for p in problems:
                say(f"   DIFFERS: {p}")

    def summary_line(self) -> str:
        return (
            f"deepinfer-labs: labs={len(self.results)} lines={sum(c for _, c, _ in self.results)} "
            f"differ={sum(len(p) for _, _, p in self.results)}"
        )

    def to_json(self) -> dict[str, object]:
        return {"labs": [{"name": g.name, "source": g.source, "lines": c, "differ": p} for g, c, p in self.results]}


def run_labs() -> LabsRun:
    """Every lab of chapter 11 as the spec computes it, line by line against the book."""
    return LabsRun([(golden, *golden_problems(golden)) for golden in GOLDENS])
