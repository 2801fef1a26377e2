"""``Maybe(space)``: a value of ``space``, or ``None`` for what was not measured.

A speedup on a CPU, or correctness where the device cannot run the candidate, is not 0: it is
unknown. Gymnasium has no space for "absent", so the observation says it with ``None`` and this
space accepts exactly that, keeping ``observation_space.contains(obs)`` true.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space


class Maybe(Space[Any]):
    """``None`` or an element of ``inner``; samples ``None`` half the time."""

    def __init__(self, inner: Space[Any], seed: int | np.random.Generator | None = None) -> None:
        if not isinstance(inner, Space):
            raise TypeError(f"Maybe wraps a gymnasium space, not {type(inner).__name__}")
        self.inner = inner
        super().__init__(inner.shape, inner.dtype, seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def seed(self, seed: int | None = None) -> tuple[int, Any]:
        own = super().seed(seed)
        return own, self.inner.seed(None if seed is None else int(self.np_random.integers(2**31 - 1)))

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> Any:
        if self.np_random.random() < 0.5:
            return None
        return self.inner.sample(mask=mask, probability=probability)

    def contains(self, x: Any) -> bool:
        return x is None or self.inner.contains(x)

    def to_jsonable(self, sample_n: Any) -> list[Any]:
        return [None if x is None else self.inner.to_jsonable([x])[0] for x in sample_n]

    def from_jsonable(self, sample_n: list[Any]) -> list[Any]:
        return [None if x is None else self.inner.from_jsonable([x])[0] for x in sample_n]

    def __repr__(self) -> str:
        return f"Maybe({self.inner!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Maybe) and self.inner == other.inner
