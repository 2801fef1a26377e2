"""Reference solution for activation/leaky-relu:
a select between x and slope * x.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n, negative_slope, BLOCK: tl.constexpr):
    # 64-bit offsets: bench tensors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.where(x >= 0, x, x * negative_slope)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def leaky_relu(x: torch.Tensor, negative_slope: float = 0.01) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = 2048
    leaky_relu_kernel[(triton.cdiv(n, block),)](x, out, n, negative_slope, BLOCK=block, num_warps=8)
    return out
