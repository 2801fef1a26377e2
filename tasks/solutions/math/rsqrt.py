"""Reference solution for math/rsqrt:
the hardware reciprocal square root in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rsqrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    r = tl.math.rsqrt(x)
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def rsqrt(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    rsqrt_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
    return out
