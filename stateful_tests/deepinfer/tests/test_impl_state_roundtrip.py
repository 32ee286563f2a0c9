"""impl.state_roundtrip: every round-trip law on every backend, dispatch, and the GPU path's no-host rule.

Each law of ``deepinfer.roundtrip_laws.LAWS`` is one test per backend over the standard cases (seed 1, 60
cases: the book's numbers, S < R and S = R, both modes, random layouts). torch CPU tests skip with
the reason when torch is absent and fail instead under ``KVPROOF_REQUIRE_TORCH=1``; the CUDA and
cupy tests skip with the reason when there is no GPU and fail under ``KVPROOF_REQUIRE_GPU=1``.
"""

from functools import cache

import numpy as np
import pytest

from kvproof.impl.state_roundtrip import RoundTrip, backend_for, ring_groups
from kvproof.spec import state_layout as S
from kvproof.spec.deepinfer_errors import StateArgumentType
from kvproof.stateful_tests.deepinfer.backends import BACKEND_NAMES, backend, required
from kvproof.stateful_tests.deepinfer.roundtrip_laws import LAWS, make_cases, run_suite


def need(name: str):
    be = backend(name)
    if not be.available:
        if required(name):
            pytest.fail(f"backend {name} is required here but unavailable: {be.reason}")
        pytest.skip(f"backend {name}: {be.reason}")
    return be


@cache
def standard_cases():
    return tuple(make_cases(1, 60))


@pytest.mark.parametrize("law", LAWS, ids=lambda law: f"{law.name}-{law.title}")
@pytest.mark.parametrize("backend_name", BACKEND_NAMES)
def test_law(backend_name, law):
    need(backend_name)
    report = run_suite(backend_name, laws=[law], cases=standard_cases())
    result = report.results[0]
    assert result.passed, "\n".join(
        f"case {c.index} [{c.name}]: {m}\n  replay: {report.replay(c)}" for c, m in result.problems[:5]
    )
    if law.name not in ("X1", "H1") or backend_name != "numpy":
        assert result.checks > 0, f"{law.name} made no check on {backend_name}"


def test_every_law_applies_to_some_standard_case():
    report = run_suite("numpy", cases=standard_cases())
    idle = [r.law.name for r in report.results if r.cases == 0 and r.law.name != "X1"]
    assert not idle


def test_the_standard_cases_cover_what_the_traps_need():
    cases = standard_cases()
    rings = [(s.rows, s.transfer_rows) for c in cases for s in c.layout.segments if isinstance(s, S.Ring)]
    assert (134, 128) in rings and any(0 < t < r for r, t in rings) and any(r == t for r, t in rings)
    assert {c.layout.mode for c in cases} == {"ring-view", "raw-prefix"}
    assert any(c.state_id != 0 and c.n_states > 1 for c in cases)
    assert any(c.lhp < 127 and c.layout.mode == "ring-view" for c in cases)  # negative window positions
    assert any(any(g.count > 1 for g in ring_groups(S.carved(c.layout, True))) for c in cases)  # grouped rings


def test_dispatch_by_type():
    assert backend_for(np.zeros((1, 1), np.uint8)).name == "numpy"
    with pytest.raises(StateArgumentType):
        backend_for([[0]])
    with pytest.raises(StateArgumentType):
        RoundTrip(S.book_layout()).select(memoryview(bytes(10)), 0, 5, True)


def test_alike_layers_move_as_one_group():
    groups = ring_groups(S.carved(S.book_layout(stored_layers=5, dropped_layers=3), True))
    assert [(g.count, g.dropped) for g in groups] == [(5, False), (3, True)]


def test_allocated_destinations_keep_their_fill_in_padding():
    """The out=None path allocates (torch.empty in the book): alloc_fill makes its arbitrary bytes visible."""
    layout = S.StateLayout((S.Ring("a", 6, 3, 3),), align=16)
    cache = np.full((2, S.sizes(layout).cache_row_bytes), 7, np.uint8)
    out = RoundTrip(layout, alloc_fill=0xAB).select(cache, 0, 10, False)
    assert bytes(out) == bytes([7] * 9) + bytes([0xAB] * 7)


def _forbid_host_transfers(monkeypatch, name):
    def boom(*args, **kwargs):
        raise AssertionError("the implementation moved data to the host")

    if name in ("torch", "cuda"):
        import torch

        for attr in ("numpy", "cpu", "item", "tolist", "__array__"):
            monkeypatch.setattr(torch.Tensor, attr, boom)
        original_to = torch.Tensor.to

        def to_but_not_off_the_device(self, *args, **kwargs):
            moved = original_to(self, *args, **kwargs)
            if moved.device != self.device:
                boom()
            return moved

        monkeypatch.setattr(torch.Tensor, "to", to_but_not_off_the_device)
    else:
        import cupy

        monkeypatch.setattr(cupy, "asnumpy", boom)
        try:  # cupy.ndarray is an extension type: its methods may not be patchable
            monkeypatch.setattr(cupy.ndarray, "get", boom)
        except (TypeError, AttributeError):
            pass


@pytest.mark.parametrize("backend_name", ["torch", "cuda", "cupy"])
@pytest.mark.parametrize("mode", ["ring-view", "raw-prefix"])
def test_device_path_stays_on_the_device(monkeypatch, backend_name, mode):
    """select and load run with every host conversion of the library disabled; results live on the cache's device."""
    _run_on_device(monkeypatch, backend_name, mode, RoundTrip)


@pytest.mark.parametrize("backend_name", ["torch", "cuda", "cupy"])
def test_device_path_check_catches_a_host_round_trip(monkeypatch, backend_name):
    """Negative control: a select that stages its rings through host memory is caught."""
    from kvproof.stateful_tests.deepinfer.mutants import ViaHost

    with pytest.raises(AssertionError, match="moved data to the host"):
        _run_on_device(monkeypatch, backend_name, "ring-view", ViaHost)


def _run_on_device(monkeypatch, backend_name, mode, factory):
    be = need(backend_name)
    layout = S.book_layout(mode=mode)
    s = S.sizes(layout)
    host = np.random.default_rng(3).integers(1, 256, (3, s.cache_row_bytes), dtype=np.uint8)
    cache = be.from_numpy(host)
    tensor = be.from_numpy(host[0, : s.state_size_to_disk].copy())
    rt = factory(layout)
    _forbid_host_transfers(monkeypatch, backend_name)
    try:
        handoff = rt.select(cache, 1, 767, True)
        stored = rt.select(cache, 1, 767, False, copy=True)
        rt.load(cache, 2, tensor, 767, "on")
    finally:
        monkeypatch.undo()
    for result in (handoff, stored):
        assert backend_for(result).name == backend_for(cache).name
        assert backend_for(result).device(result) == backend_for(cache).device(cache)
    model = tuple(bytes(r) for r in host)
    want = S.select(layout, model, 1, 767, True)
    assert S.take(bytes(be.to_numpy(handoff)), want.specified) == S.take(want.data, want.specified)
