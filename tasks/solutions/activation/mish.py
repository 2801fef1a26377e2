"""Reference solution for activation/mish:
tanh(log(1 + t)) = n / (n + 2) with t = exp(x), n = t (t + 2):
no cancellation for negative x; past x = 20 the result is x to float32 precision.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def mish_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 64-bit offsets: bench tensors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    t = tl.exp(tl.minimum(x, 20.0))
    nn = t * (t + 2.0)
    y = tl.where(x > 20.0, x, x * nn / (nn + 2.0))
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def mish(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = 2048
    mish_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
    return out
