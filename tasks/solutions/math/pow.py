"""Reference solution for math/pow:
x^p = exp2(p * log2(x)) for positive x.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def pow_kernel(x_ptr, out_ptr, n, exponent, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    r = tl.exp2(exponent * tl.log2(x))
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def pow(x: torch.Tensor, exponent: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    pow_kernel[(triton.cdiv(n, block),)](x, out, n, exponent, BLOCK=block, num_warps=8)
    return out
