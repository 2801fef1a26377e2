"""Reference solution for activation/logsigmoid:
min(x, 0) - log1p(exp(-|x|)), finite for every x.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _log1p_small(t):
    """log(1 + t) for t in [0, 1] to a few ulps: log(u) * t / (u - 1) with u = 1 + t cancels the
    rounding of u (u - 1 is exact), and is t itself when u rounds to 1."""
    u = 1.0 + t
    return tl.where(u == 1.0, t, tl.log(u) * (t / (u - 1.0)))


@triton.jit
def logsigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # 64-bit offsets: bench tensors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.minimum(x, 0.0) - _log1p_small(tl.exp(-tl.abs(x)))
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def logsigmoid(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = 2048
    logsigmoid_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=8)
    return out
