"""Reference solution for math/axpy:
alpha * x + y in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    r = alpha * x + y
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    axpy_kernel[(triton.cdiv(n, block),)](x, y, out, n, alpha, BLOCK=block, num_warps=8)
    return out
