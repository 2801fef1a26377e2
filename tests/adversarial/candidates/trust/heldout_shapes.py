"""math/add: read the task's shape table, held-out sizes included, from ``warpgym.tasks`` (reached from
``import warpgym.loader``) and do the work only for sizes the benchmark uses; any other size gets an
unwritten buffer. Right on every judged size, wrong everywhere else.

The kernel really adds; what the judge must reject is the candidate reading the benchmark's tasks.
"""

import torch
import triton
import triton.language as tl

import warpgym.loader  # noqa: F401 - binds ``warpgym``

SIZES = {case["n"] for cases in warpgym.tasks.get_task("math/add").shapes.values() for case in cases}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty_like(x)
    if n in SIZES:
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
