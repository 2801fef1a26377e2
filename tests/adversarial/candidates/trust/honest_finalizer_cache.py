"""math/add: an honest kernel that keeps a small cache of launch configurations, dropped by a finalizer when
the input it was made for goes away, and marks its output with an attribute (``out.tag``).

Neither computes anything: the finalizer clears a dict, and the attribute names no tensor method. Both run
inside the worker's watch, and must not be mistaken for the candidate computing on the host.
"""

import weakref

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


_grids: dict[int, tuple[int]] = {}


class _Owner:
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    owner = _Owner()  # freed with this frame: its finalizer empties the cache
    weakref.finalize(owner, _grids.clear)
    grid = _grids.setdefault(x.numel(), (triton.cdiv(x.numel(), 1024),))
    add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)
    out.tag = "sum"
    return out
