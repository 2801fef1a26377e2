"""Reference solution for math/addcmul:
x + value * y * z in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def addcmul_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, value, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    z = tl.load(z_ptr + offsets, mask=mask).to(tl.float32)
    r = x + value * (y * z)
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def addcmul(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, value: float = 1.0) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    addcmul_kernel[(triton.cdiv(n, block),)](x, y, z, out, n, value, BLOCK=block, num_warps=8)
    return out
