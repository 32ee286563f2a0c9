"""The linear capacity model of lab 23, in exact rational arithmetic.

With λ requests per second, fixed input length L and output length O, a fraction h of input
*tokens* reused, sustained per-GPU rates vP (prefill) and vD (decode) and target utilisation
u, the GPU-equivalent estimates are::

    GP = ceil(λ · L · (1 − h) / (u · vP))        GD = ceil(λ · O / (u · vD))

Lab 23 assigns λ = 4, L = 1024, O = 64, vP = 2048, vD = 128, u = 0.8 and prints P = 3, D = 3
at h = 0 and P = 1, D = 3 at h = 0.75 (the unrounded demands are 5/2, 5/2 and 5/8). Every
quantity is a ``Fraction``: ``u = 0.8`` means exactly 4/5, and a demand that is an exact
integer is not rounded up by a floating-point residue.

h is the fraction of input tokens reused, not the request hit rate: one hundred requests
that each hit ten tokens of a thousand-token prompt have a request hit rate of 100% but
reuse 1% of input tokens (``reused_token_fraction`` versus ``request_hit_rate``).

Units are GPU equivalents, not deployable group sizes; the model suppresses context-dependent
cost, batch shape and EP group granularity.

Source: docs/sources.md#deepinfer-11-2-1 (formula, lab 23 capacity OUTPUT, the 100-request example);
docs/sources.md#state-roundtrip-1 "Capacity model", docs/sources.md#state-roundtrip-4.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .arith import PY, Arith
from .deepinfer_errors import InvalidQuantity
from .quantities import as_count, as_rational, in_range


@dataclass(frozen=True, slots=True)
class Workload:
    """The inputs of the capacity model; numbers are exact (see ``quantities.as_rational``)."""

    arrival_rate: Fraction  # λ, requests per second
    input_length: Fraction  # L, tokens
    output_length: Fraction  # O, tokens
    reuse_fraction: Fraction  # h, fraction of input tokens reused, in [0, 1]
    prefill_rate: Fraction  # vP, tokens per second per GPU
    decode_rate: Fraction  # vD, tokens per second per GPU
    utilisation: Fraction  # u, in (0, 1]


def workload(arrival_rate, input_length, output_length, reuse_fraction, prefill_rate, decode_rate, utilisation) -> Workload:
    """Return a checked ``Workload``; out-of-domain or non-finite numbers raise ``InvalidQuantity``."""
    w = Workload(
        in_range("arrival_rate", as_rational("arrival_rate", arrival_rate), 0, None),
        in_range("input_length", as_rational("input_length", input_length), 0, None),
        in_range("output_length", as_rational("output_length", output_length), 0, None),
        in_range("reuse_fraction", as_rational("reuse_fraction", reuse_fraction), 0, 1),
        in_range("prefill_rate", as_rational("prefill_rate", prefill_rate), 0, None, low_open=True),
        in_range("decode_rate", as_rational("decode_rate", decode_rate), 0, None, low_open=True),
        in_range("utilisation", as_rational("utilisation", utilisation), 0, 1, low_open=True),
    )
    return w


def prefill_demand(w: Workload) -> Fraction:
    """Return the unrounded prefill GPU equivalents λ·L·(1−h)/(u·vP).

    Source: docs/sources.md#deepinfer-11-2-1 formula for GP.
    """
    return w.arrival_rate * w.input_length * (1 - w.reuse_fraction) / (w.utilisation * w.prefill_rate)


def decode_demand(w: Workload) -> Fraction:
    """Return the unrounded decode GPU equivalents λ·O/(u·vD).

    Source: docs/sources.md#deepinfer-11-2-1 formula for GD.
    """
    return w.arrival_rate * w.output_length / (w.utilisation * w.decode_rate)


def whole_gpus(numerator: Any, denominator: Any, ops: Arith = PY) -> Any:
    """Return the demand ``numerator / denominator`` rounded up to whole GPU equivalents (the least
    ``g`` with ``g * denominator >= numerator``), in exact integer arithmetic.

    The caller passes a non-negative numerator and a positive denominator (a ``Fraction``'s
    parts). ``proofs/`` proves it is the least sufficient count for all integers; rounding a
    float instead can overshoot by one (docs/deepinfer-findings.md D2).

    Source: docs/sources.md#deepinfer-11-2-1 "GP = ⌈...⌉, GD = ⌈...⌉".
    """
    return ops.floordiv(numerator + denominator - 1, denominator)


def prefill_gpus(w: Workload) -> int:
    """Return GP, the prefill demand rounded up to whole GPU equivalents."""
    demand = prefill_demand(w)
    return whole_gpus(demand.numerator, demand.denominator)


def decode_gpus(w: Workload) -> int:
    """Return GD, the decode demand rounded up to whole GPU equivalents."""
    demand = decode_demand(w)
    return whole_gpus(demand.numerator, demand.denominator)


LAB23_WORKLOAD = dict(
    arrival_rate=4, input_length=1024, output_length=64, prefill_rate=2048, decode_rate=128, utilisation=Fraction(4, 5)
)
"""Lab 23's assigned λ, L, O, vP, vD and u (h varies)."""

LAB23_REUSE = (Fraction(0), Fraction(3, 4))
"""The reused-input fractions lab 23 prints."""


def lab23_capacity_report() -> list[str]:
    """Return lab 23's capacity lines: a header and ``reused input fraction h%: P=GP, D=GD`` per h.

    Source: docs/sources.md#deepinfer-11-2-1 OUTPUT ("Capacity model (GPU equivalents, not deployment sizes):").
    """
    lines = ["Capacity model (GPU equivalents, not deployment sizes):"]
    for h in LAB23_REUSE:
        w = workload(reuse_fraction=h, **LAB23_WORKLOAD)
        percent = h * 100
        shown = f"{percent.numerator}" if percent.denominator == 1 else f"{float(percent):g}"
        lines.append(f"reused input fraction {shown}%: P={prefill_gpus(w)}, D={decode_gpus(w)}")
    return lines


def reused_token_fraction(requests: Iterable[tuple[int, int]]) -> Fraction:
    """Return h: reused input tokens over all input tokens, for ``(prompt_tokens, hit_tokens)`` pairs.

    Source: docs/sources.md#deepinfer-11-2-1 "The meaning of h matters ... only 1% of input tokens are reused".
    """
    total = hit = 0
    for prompt, hit_tokens in requests:
        prompt = as_count("prompt_tokens", prompt)
        hit_tokens = as_count("hit_tokens", hit_tokens)
        if hit_tokens > prompt:
            raise InvalidQuantity(f"hit {hit_tokens} exceeds prompt {prompt}")
        total += prompt
        hit += hit_tokens
    if total == 0:
        raise InvalidQuantity("no input tokens: the reused fraction is undefined")
    return Fraction(hit, total)


def request_hit_rate(requests: Iterable[tuple[int, int]]) -> Fraction:
    """Return the fraction of requests with any hit: NOT the h of the capacity model.

    Source: docs/sources.md#deepinfer-11-2-1 "the request hit rate is 100%, but only 1% of input tokens are reused".
    """
    pairs = [(as_count("prompt_tokens", p), as_count("hit_tokens", h)) for p, h in requests]
    if not pairs:
        raise InvalidQuantity("no requests: the hit rate is undefined")
    return Fraction(sum(1 for _, h in pairs if h > 0), len(pairs))
