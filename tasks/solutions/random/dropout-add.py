"""Reference solution for random/dropout-add: residual + dropout(x) in one pass, one Philox draw per
element keyed by (seed, flat index); a dropped element stores the residual unchanged."""

import torch
import triton
import triton.language as tl


@triton.jit
def dropout_add_kernel(x_ptr, r_ptr, out_ptr, numel, p, scale, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, (r + tl.where(keep, x * scale, 0.0)).to(out_ptr.dtype.element_ty), mask=mask)


def dropout_add(x: torch.Tensor, residual: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    x, residual = x.contiguous(), residual.contiguous()
    out = torch.empty_like(x)
    numel = x.numel()
    block = 4096
    dropout_add_kernel[(triton.cdiv(numel, block),)](x, residual, out, numel, p, 1.0 / (1.0 - p), seed,
                                                     BLOCK=block, num_warps=8)
    return out
