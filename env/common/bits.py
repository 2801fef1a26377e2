"""Bit-level tensor equality, for the worker's "inputs left as given" check and the judge's "same seed,
same output" checks: both sides must agree on what "unchanged" means, NaN payloads included."""

from __future__ import annotations

from collections.abc import Callable

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


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def flat_positions(at: list[float], numel: int) -> torch.Tensor:
    """The flat positions the fractions ``at`` name in ``numel`` elements: the one mapping the worker reads
    a sampled output with and the judge reads the reference with."""
    return torch.tensor([int(f * numel) for f in at], dtype=torch.long)


def take_bits(t: torch.Tensor, where: torch.Tensor, take: Callable[..., torch.Tensor] = torch.take
              ) -> torch.Tensor:
    """``t``'s elements at the flat positions ``where``, as float64 on the host. They are gathered as
    integers of the same size, so every real dtype comes back exactly (``torch.take`` indexes no float8)."""
    ints = _SAME_SIZE_INT.get(t.element_size())
    if ints is None or t.is_complex():
        raise TypeError(f"cannot read {t.dtype} elements")
    picked = take(t.detach().view(ints), where.to(t.device))
    return picked.to("cpu").view(t.dtype).to(torch.float64)
