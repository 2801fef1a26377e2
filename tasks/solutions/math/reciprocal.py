"""Reference solution for math/reciprocal:
1 / x in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def reciprocal_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    r = 1.0 / x
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def reciprocal(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    reciprocal_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
    return out
