"""Elementwise and pointwise math."""

from __future__ import annotations

from ..registry import register
from ..spec import Task

register(Task(
    id="math/add",
    entrypoint="add",
    signature="def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    description="""
Elementwise sum of two contiguous 1-D float32 tensors of the same length n: out[i] = x[i] + y[i].
Return a new tensor of shape (n,) and dtype float32; do not modify x or y. n is any positive
integer, often not a multiple of the block size.
""",
    reference=lambda x, y: x + y,
    make_inputs=lambda case, s: {"x": s.tensor((case["n"],)), "y": s.tensor((case["n"],))},
    shapes={
        "dev": [{"n": 1000}, {"n": 4097}, {"n": 98309}],
        "heldout": [{"n": 1}, {"n": 12345}, {"n": 1_000_003}],
        "bench": [{"n": 1 << 28}],
    },
    dtypes=("float32",),
    flops=lambda c: c["n"],
    bytes=lambda c: 3 * 4 * c["n"],
    distributions=("normal", "uniform", "large"),
))

