"""Deterministic input sampling: the same (seed, distribution, device) gives the same inputs.

The harness and the candidate's worker build inputs separately from the same seed, so the
reference never has to cross into the candidate's process.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

DISTRIBUTIONS = ("normal", "uniform", "outliers", "large", "small")


class Sampler:
    """Draws tensors for one (seed, distribution) on one device.

    Distributions probe what a plausible wrong kernel gets wrong:
    - ``normal``: N(0, 1);
    - ``uniform``: U(-1, 1);
    - ``outliers``: N(0, 1) with about 1% of elements scaled by 100 (a missing
      max-subtraction or a bad reduction order shows);
    - ``large``: N(0, 1) * 10 + 50 (overflow of exp without the max trick, cancellation);
    - ``small``: N(0, 1) * 1e-3 (a tolerance that is only absolute would pass anything).
    """

    def __init__(self, seed: int, dist: str = "normal", device: str | torch.device = "cpu") -> None:
        if dist not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {dist!r}; use one of {DISTRIBUTIONS}")
        self.seed = seed
        self.dist = dist
        self.device = torch.device(device)
        # Draw on the CPU, then move: identical values on every device and machine.
        self.generator = torch.Generator(device="cpu").manual_seed(seed)

    def _finish(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return t.to(dtype=dtype).to(self.device)

    def tensor(self, shape: Sequence[int], dtype: torch.dtype | str = torch.float32,
               scale: float = 1.0, offset: float = 0.0) -> torch.Tensor:
        """A floating tensor from this sampler's distribution, times ``scale`` plus ``offset``."""
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        shape = tuple(int(s) for s in shape)
        g = self.generator
        if self.dist == "uniform":
            t = torch.rand(shape, generator=g, dtype=torch.float32) * 2 - 1
        else:
            t = torch.randn(shape, generator=g, dtype=torch.float32)
            if self.dist == "outliers":
                mask = torch.rand(shape, generator=g) < 0.01
                t = torch.where(mask, t * 100.0, t)
            elif self.dist == "large":
                t = t * 10.0 + 50.0
            elif self.dist == "small":
                t = t * 1e-3
        return self._finish(t * scale + offset, dtype)

    def normal(self, shape: Sequence[int], dtype: torch.dtype | str = torch.float32,
               mean: float = 0.0, std: float = 1.0) -> torch.Tensor:
        """Always N(mean, std), whatever the distribution (weights, scales)."""
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        t = torch.randn(tuple(shape), generator=self.generator, dtype=torch.float32) * std + mean
        return self._finish(t, dtype)

    def uniform(self, shape: Sequence[int], low: float = 0.0, high: float = 1.0,
                dtype: torch.dtype | str = torch.float32) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        t = torch.rand(tuple(shape), generator=self.generator, dtype=torch.float32) * (high - low) + low
        return self._finish(t, dtype)

    def randint(self, low: int, high: int, shape: Sequence[int],
                dtype: torch.dtype | str = torch.int64) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        t = torch.randint(low, high, tuple(shape), generator=self.generator, dtype=torch.int64)
        return self._finish(t, dtype)

    def permutation(self, n: int, dtype: torch.dtype | str = torch.int64) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        return self._finish(torch.randperm(n, generator=self.generator), dtype)

    def integer(self, low: int, high: int) -> int:
        """A Python int in [low, high), e.g. a seed argument for random-number tasks."""
        return int(torch.randint(low, high, (1,), generator=self.generator).item())
