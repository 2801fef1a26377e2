"""Bit-level tensor equality, for the worker's "inputs left as given" check and the judge's "same seed,
same output" checks: both sides must agree on what "unchanged" means, NaN payloads included."""

from __future__ import annotations

import torch


def raw_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes in row-major order (a plain ``.contiguous()`` keeps odd strides on size-1
    dimensions, which ``view(torch.uint8)`` rejects)."""
    return t.detach().clone(memory_format=torch.contiguous_format).reshape(-1).view(torch.uint8)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaN payloads included), for "same inputs, same output" checks."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return a.numel() == 0 or bool(torch.equal(raw_bytes(a), raw_bytes(b)))
