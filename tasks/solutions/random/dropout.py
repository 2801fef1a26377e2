"""Reference solution for random/dropout: one Philox draw per element, keyed by (seed, flat index).

tl.rand(seed, offsets) is counter-based: the same (seed, offset) always gives the same number, so
the result does not depend on the launch configuration. An element is kept when u >= p (u in
[0, 1)), which has probability 1 - p, and scaled by 1 / (1 - p).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x_ptr, out_ptr, numel, p, scale, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x * scale, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    numel = x.numel()
    block = 4096
    dropout_kernel[(triton.cdiv(numel, block),)](x, out, numel, p, 1.0 / (1.0 - p), seed, BLOCK=block,
                                                 num_warps=8)
    return out
