"""Lab 23: four requests through prefill (P) and decode (D) workers, in assigned time units.

All requests arrive at time zero. Each prompt has 1,024 tokens, of which ``hit`` can be
reused. Matching takes one unit and must finish before routing, so no prefill starts before
t = 1. Prefill processes 128 new tokens per unit. A P/D handoff adds ``transfer`` units with
no limit on concurrent transfers. Decode workers each need four units per request. Workers
serve one request at a time, without batching or eviction; prefix fetching costs nothing.

Prefill routing (Listing 11.3, given by the book): requests in id order; the candidates are
both P workers when the cache is shared, else only worker 0 (the local owner of the prefix);
the worker free earliest wins, ties to the lower index; ``start = max(1, free)``;
``end = start + (1024 - hit) // 128``.

Decode assignment (NOT printed by the book, inferred; docs/sources.md#state-roundtrip-4): requests reach
decode at ``prefill end + transfer`` and are served first-come first-served, ordered by
``(arrival, request id)``; each goes to the decode worker free earliest, ties to the lower
index, and starts at ``max(arrival, free)``. This is the ``"earliest-free"`` policy. It is the
rule that reproduces all five printed lines; the alternative ``"same-rank"`` (decode on the
worker with the prefill rank's index) gives D ends [8, 12, 16, 20] for local affinity instead
of the printed [8, 10, 12, 14] and is kept only to show that the inference is forced.

Lists are reported in request-id order.

Source: docs/sources.md#deepinfer-11 opening ("Run the service experiment", five OUTPUT lines) and Listing 11.3
(docs/sources.md#deepinfer-listings); docs/sources.md#state-roundtrip-4 "Lab 23", docs/sources.md#state-roundtrip-6
A12.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .deepinfer_errors import InvalidQuantity
from .quantities import as_count

DecodePolicy = Literal["earliest-free", "same-rank"]


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """The assigned costs of lab 23 (defaults are the book's)."""

    requests: int = 4
    prompt: int = 1024
    hit: int = 768
    match_units: int = 1
    prefill_rate: int = 128
    prefill_workers: int = 2
    decode_workers: int = 2
    decode_units: int = 4
    transfer: int = 1
    shared: bool = True
    decode_policy: DecodePolicy = "earliest-free"

    def check(self) -> None:
        """Raise ``InvalidQuantity``/``InvalidQuantityType`` unless every field is in its domain."""
        for name in ("requests", "prompt", "hit", "match_units", "transfer"):
            as_count(name, getattr(self, name))
        for name in ("prefill_rate", "prefill_workers", "decode_workers", "decode_units"):
            as_count(name, getattr(self, name), minimum=1)
        if self.hit > self.prompt:
            raise InvalidQuantity(f"hit {self.hit} exceeds prompt {self.prompt}")
        if not isinstance(self.shared, bool):
            raise InvalidQuantity(f"shared must be a bool, got {self.shared!r}")
        if self.decode_policy not in ("earliest-free", "same-rank"):
            raise InvalidQuantity(f"unknown decode policy {self.decode_policy!r}")
        if self.decode_policy == "same-rank" and self.decode_workers < self.prefill_workers:
            raise InvalidQuantity("same-rank decode needs a decode worker per prefill worker")


@dataclass(frozen=True, slots=True)
class ServiceTrace:
    """Per request (in id order): the prefill worker, prefill start and end, decode worker and end."""

    prefill_rank: tuple[int, ...]
    prefill_start: tuple[int, ...]
    prefill_end: tuple[int, ...]
    decode_rank: tuple[int, ...]
    decode_end: tuple[int, ...]


def prefill_units(config: ServiceConfig) -> int:
    """Return the prefill time of one request: new tokens over the rate, floored as Listing 11.3's ``//``.

    The lab's numbers are all multiples of 128, where floor and ceiling agree.
    """
    return (config.prompt - config.hit) // config.prefill_rate


def simulate(config: ServiceConfig) -> ServiceTrace:
    """Return the schedule of lab 23 under ``config``: prefill per Listing 11.3, decode per the inferred policy.

    Source: Listing 11.3 (docs/sources.md#deepinfer-listings) (prefill); docs/sources.md#state-roundtrip-4 (decode:
    FIFO by (arrival, id), earliest-free worker, ties to the lower index).
    """
    config.check()
    prefill_free = [0] * config.prefill_workers
    ranks, starts, ends = [], [], []
    for _request in range(config.requests):
        candidates = range(config.prefill_workers) if config.shared else [0]
        rank = min(candidates, key=lambda i: (prefill_free[i], i))
        start = max(config.match_units, prefill_free[rank])
        end = start + prefill_units(config)
        prefill_free[rank] = end
        ranks.append(rank)
        starts.append(start)
        ends.append(end)

    decode_free = [0] * config.decode_workers
    decode_rank = [0] * config.requests
    decode_end = [0] * config.requests
    arrivals = sorted((ends[r] + config.transfer, r) for r in range(config.requests))
    for arrival, request in arrivals:
        if config.decode_policy == "earliest-free":
            worker = min(range(config.decode_workers), key=lambda i: (decode_free[i], i))
        else:
            worker = ranks[request]
        begin = max(arrival, decode_free[worker])
        decode_free[worker] = begin + config.decode_units
        decode_rank[request] = worker
        decode_end[request] = decode_free[worker]
    return ServiceTrace(tuple(ranks), tuple(starts), tuple(ends), tuple(decode_rank), tuple(decode_end))


LAB23_CASES: tuple[tuple[str, ServiceConfig], ...] = (
    ("local affinity", ServiceConfig(shared=False)),
    ("shared cache", ServiceConfig(shared=True)),
    ("shared, no hits", ServiceConfig(shared=True, hit=0)),
    ("shared, slower handoff", ServiceConfig(shared=True, transfer=3)),
    ("affinity, slower handoff", ServiceConfig(shared=False, transfer=3)),
)
"""The five cases lab 23 prints, in its order."""


def lab23_report(decode_policy: DecodePolicy = "earliest-free") -> list[str]:
    """Return lab 23's printed output: a header and one ``P ends [...]; D ends [...]`` line per case.

    Source: docs/sources.md#deepinfer-11 (the chapter's opening), "python3 lab 23" OUTPUT.
    """
    lines = ["Assigned time units; four requests, two P and two D workers"]
    for name, config in LAB23_CASES:
        trace = simulate(replace(config, decode_policy=decode_policy))
        lines.append(f"{name}: P ends {list(trace.prefill_end)}; D ends {list(trace.decode_end)}")
    return lines


def last_completion(config: ServiceConfig) -> int:
    """Return the time the last answer arrives (the largest decode end)."""
    return max(simulate(config).decode_end)
