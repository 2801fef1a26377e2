"""math/add: a kernel that adds in the interpreter and, when compiled for a GPU, skips every other
block (a constexpr read from ``TRITON_INTERPRET`` picks the path): a harness that checks correctness
only in the CPU interpreter and compiles the kernel merely to count instructions passes it, while on the
device half the output is never written.
"""

import os

import torch
import triton
import triton.language as tl

INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    if not INTERPRETED:
        mask = mask & (pid % 2 == 0)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
