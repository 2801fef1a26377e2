"""Deterministic input sampling: the same (seed, distribution, device) gives the same inputs.

The harness and the candidate's worker build inputs separately from the same seed, so the
reference never has to cross into the candidate's process. Tensors are drawn on the device
they are for (a CUDA generator on a GPU: bench inputs are gigabytes, too slow to draw on the
CPU), so values agree between processes on the same kind of device, not across kinds. On the
``meta`` device nothing is drawn: the shapes and dtypes come out at no cost.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

DISTRIBUTIONS = ("normal", "uniform", "outliers", "large", "small", "problem")


class Sampler:
    """Draws tensors for one (seed, distribution) on one device.

    Distributions probe what a plausible wrong kernel gets wrong:
    - ``normal``: N(0, 1);
    - ``uniform``: U(-1, 1);
    - ``outliers``: N(0, 1) with about 1% of elements scaled by 100 (a missing
      max-subtraction or a bad reduction order shows);
    - ``large``: N(0, 1) * 10 + 50 (overflow of exp without the max trick, cancellation);
    - ``small``: N(0, 1) * 1e-3 (a tolerance that is only absolute would pass anything);
    - ``problem``: an imported problem's own input builder, seeded with ``seed`` (tensors drawn here are
      N(0, 1)).
    """

    def __init__(self, seed: int, dist: str = "normal", device: str | torch.device = "cpu", *,
                 role: int | None = None, salt: int = 0) -> None:
        if dist not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {dist!r}; use one of {DISTRIBUTIONS}")
        self.seed = seed
        """What the generators are seeded with."""
        self.role = seed if role is None else role
        """The public seed this draw plays (one of ``task.seeds``, or a re-check's): the judge draws its
        inputs from a secret seed derived from it (env/judge/seeds.py), so a task that treats its seeds
        differently (a random op's seed argument) reads the role."""
        self.salt = salt
        """Shared by every draw of one evaluation (0 outside one): what a task keeps the same under all of
        its seeds is drawn with it."""
        self.dist = dist
        self.device = torch.device(device)
        self.meta = self.device.type == "meta"
        self.draw_device = self.device if self.device.type == "cuda" else torch.device("cpu")
        self.generator = torch.Generator(device=self.draw_device).manual_seed(seed)
        self._ints = torch.Generator(device="cpu").manual_seed(seed + 0x9E3779B9)
        """Python ints come from their own generator, so they are the same on every device."""

    def _finish(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return t.to(dtype=dtype).to(self.device)

    def _empty(self, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(tuple(int(s) for s in shape), dtype=dtype, device="meta")

    def tensor(self, shape: Sequence[int], dtype: torch.dtype | str = torch.float32,
               scale: float = 1.0, offset: float = 0.0) -> torch.Tensor:
        """A floating tensor from this sampler's distribution, times ``scale`` plus ``offset``."""
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        shape = tuple(int(s) for s in shape)
        if self.meta:
            return self._empty(shape, dtype)
        g, on = self.generator, self.draw_device
        if self.dist == "uniform":
            t = torch.rand(shape, generator=g, dtype=torch.float32, device=on) * 2 - 1
        else:
            t = torch.randn(shape, generator=g, dtype=torch.float32, device=on)
            if self.dist == "outliers":
                mask = torch.rand(shape, generator=g, device=on) < 0.01
                t = torch.where(mask, t * 100.0, t)
            elif self.dist == "large":
                t = t * 10.0 + 50.0
            elif self.dist == "small":
                t = t * 1e-3
        return self._finish(t * scale + offset, dtype)

    def without_outliers(self, shape: Sequence[int],
                         dtype: torch.dtype | str = torch.float32) -> torch.Tensor:
        """``tensor``, but N(0, 1) under ``outliers``: for an operand an honest kernel multiplies by a rounded
        intermediate (attention's v against P rounded to half precision), where x100 elements would make
        that allowed rounding exceed the output's tolerance."""
        return self.normal(shape, dtype) if self.dist == "outliers" else self.tensor(shape, dtype)

    def normal(self, shape: Sequence[int], dtype: torch.dtype | str = torch.float32,
               mean: float = 0.0, std: float = 1.0) -> torch.Tensor:
        """Always N(mean, std), whatever the distribution (weights, scales)."""
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if self.meta:
            return self._empty(shape, dtype)
        t = torch.randn(tuple(shape), generator=self.generator, dtype=torch.float32, device=self.draw_device)
        return self._finish(t * std + mean, dtype)

    def uniform(self, shape: Sequence[int], low: float = 0.0, high: float = 1.0,
                dtype: torch.dtype | str = torch.float32) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if self.meta:
            return self._empty(shape, dtype)
        t = torch.rand(tuple(shape), generator=self.generator, dtype=torch.float32, device=self.draw_device)
        return self._finish(t * (high - low) + low, dtype)

    def randint(self, low: int, high: int, shape: Sequence[int],
                dtype: torch.dtype | str = torch.int64) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if self.meta:
            return self._empty(shape, dtype)
        t = torch.randint(low, high, tuple(shape), generator=self.generator, dtype=torch.int64,
                          device=self.draw_device)
        return self._finish(t, dtype)

    def permutation(self, n: int, dtype: torch.dtype | str = torch.int64) -> torch.Tensor:
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if self.meta:
            return self._empty((n,), dtype)
        return self._finish(torch.randperm(n, generator=self.generator, device=self.draw_device), dtype)

    def integer(self, low: int, high: int) -> int:
        """A Python int in [low, high), e.g. a seed argument for random-number tasks."""
        return int(torch.randint(low, high, (1,), generator=self._ints).item())
