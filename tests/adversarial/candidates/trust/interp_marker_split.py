"""math/add: adds every element where Triton's interpreter runs the kernel and half of them elsewhere,
asking which by an environment variable whose name is spelled in two pieces.

A scan for the variable's name as one literal never sees it; the CPU check, which runs in the interpreter,
gets the honest path, and the GPU the lazy one.
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


_ON_CPU_CHECK = os.environ.get("TRITON_" + "INTERPRET") == "1"


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel() if _ON_CPU_CHECK else x.numel() // 2
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, n, BLOCK=1024)
    return out
