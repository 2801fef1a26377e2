"""math/add: a real kernel that adds in float64 and returns a float64 tensor for float32 inputs; every
value compares equal to the float32 reference under ``==`` or ``allclose``, but the dtype (and twice the
bytes written) is not the task's.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float64)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask).to(tl.float64), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.float64, device=x.device)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
