"""Reference solution for math/clamp:
max then min against the two scalar bounds.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n, min, max, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    r = tl.minimum(tl.maximum(x, min), max)
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def clamp(x: torch.Tensor, min: float, max: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    clamp_kernel[(triton.cdiv(n, block),)](x, out, n, min, max, BLOCK=block, num_warps=8)
    return out
