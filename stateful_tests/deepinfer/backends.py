"""The array backends the round-trip suite runs on, and how the harness moves bytes to and from them.

``numpy`` (host), ``torch`` (torch CPU tensors), ``cuda`` (torch CUDA tensors) and ``cupy``.
A backend that cannot run here carries the visible reason (``DeepinferBackend.reason``); nothing
is imported until asked for, and a missing GPU or library is never an exception.

``from_numpy``/``to_numpy`` are harness tools for building inputs and comparing results on
the host; the implementation under test never calls them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

BACKEND_NAMES = ("numpy", "torch", "cuda", "cupy")


def _cannot_run(array: Any) -> Any:
    raise RuntimeError("this backend cannot run here (Backend.reason says why); check Backend.available first")


@dataclass(frozen=True)
class DeepinferBackend:
    name: str
    reason: str | None  # None when it can run here
    from_numpy: Callable[[np.ndarray], Any] = _cannot_run  # the converters of a backend that cannot run here raise
    to_numpy: Callable[[Any], np.ndarray] = _cannot_run
    synchronize: Callable[[], None] = lambda: None

    @property
    def available(self) -> bool:
        return self.reason is None


def _torch_reason() -> str | None:
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        return f"torch is not installed ({exc}); install the [torch] extra: pip install -e '.[torch]'"
    return None


@cache
def backend(name: str) -> DeepinferBackend:
    """Return the named backend, with the reason it cannot run here when it cannot."""
    if name == "numpy":
        return DeepinferBackend("numpy", None, lambda a: np.array(a, copy=True), lambda a: np.array(a, copy=True))
    if name == "torch":
        reason = _torch_reason()
        if reason:
            return DeepinferBackend(name, reason)
        import torch

        return DeepinferBackend(name, None, lambda a: torch.from_numpy(np.array(a, copy=True)), lambda t: t.numpy().copy())
    if name == "cuda":
        reason = _torch_reason()
        if reason:
            return DeepinferBackend(name, reason)
        import torch

        if not torch.cuda.is_available():
            return DeepinferBackend(
                name, f"no CUDA device visible to torch {torch.__version__} (torch.cuda.is_available() is False)"
            )
        return DeepinferBackend(
            name,
            None,
            lambda a: torch.from_numpy(np.array(a, copy=True)).to("cuda"),
            lambda t: t.cpu().numpy().copy(),
            torch.cuda.synchronize,
        )
    if name == "cupy":
        try:
            import cupy
        except ImportError as exc:
            return DeepinferBackend(name, f"cupy is not installed ({exc}); install the [gpu] extra on a CUDA 12 machine")
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # cupy raises its own CUDARuntimeError without a driver
            return DeepinferBackend(name, f"cupy cannot reach a GPU: {type(exc).__name__}: {exc}")
        if count < 1:
            return DeepinferBackend(name, "cupy sees no GPU")
        return DeepinferBackend(
            name,
            None,
            lambda a: cupy.asarray(np.array(a, copy=True)),
            lambda a: cupy.asnumpy(a),
            lambda: cupy.cuda.Device().synchronize(),
        )
    raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKEND_NAMES)}")


def required(name: str) -> bool:
    """Return True when a missing ``name`` backend must fail rather than skip: ``KVPROOF_REQUIRE_TORCH`` for
    torch, ``KVPROOF_REQUIRE_GPU`` for cuda and cupy (set them where the backend is installed, as CI should)."""
    if name == "torch":
        return bool(os.environ.get("KVPROOF_REQUIRE_TORCH"))
    if name in ("cuda", "cupy"):
        return bool(os.environ.get("KVPROOF_REQUIRE_GPU"))
    return False
