"""Kernel names both sides of the trust wall read the same way: what only initialises memory, and what the
worker itself runs inside a traced window."""

from __future__ import annotations

import re

FILL_KERNELS = (
    re.compile(r"^void at::native::(vectorized_elementwise_kernel|unrolled_elementwise_kernel|"
               r"elementwise_kernel)<\d+, at::native::FillFunctor<"),
)
"""ATen's fill (torch.zeros / full / fill_): it initialises memory and computes nothing."""

HARNESS_KERNELS = ("scrub_kernel",)
"""The worker's own kernel inside a traced timed block: the shared-memory scrub before each call, as before a
checked call (env/worker/scrub.py), where it runs before the trace starts. Its name is reserved."""


def is_fill(name: str) -> bool:
    return any(p.match(name) for p in FILL_KERNELS)
