"""Reference solution for math/lerp:
PyTorch's two-sided form: x + w (y - x) for w < 0.5, else y - (1 - w) (y - x), so the
end nearer the result is the one added to (smaller rounding error).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def lerp_kernel(x_ptr, y_ptr, out_ptr, n, weight, BLOCK: tl.constexpr):
    # 64-bit offsets: the pattern must hold past 2^31 elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    d = y - x
    r = tl.where(weight < 0.5, x + weight * d, y - (1.0 - weight) * d)
    tl.store(out_ptr + offsets, r.to(out_ptr.dtype.element_ty), mask=mask)


def lerp(x: torch.Tensor, y: torch.Tensor, weight: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    block = 2048
    lerp_kernel[(triton.cdiv(n, block),)](x, y, out, n, weight, BLOCK=block, num_warps=8)
    return out
