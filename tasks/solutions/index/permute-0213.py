"""Reference solution for index/permute-0213: each program moves a (BLOCK_S, D) slab of one
(batch, head); rows of D elements stay contiguous on both sides."""

import torch
import triton
import triton.language as tl


@triton.jit
def permute_kernel(x_ptr, out_ptr, seq, heads, dim, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // heads
    h = bh % heads
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    d = tl.arange(0, BLOCK_D)
    mask = (s[:, None] < seq) & (d[None, :] < dim)
    s64 = s[:, None].to(tl.int64)
    src = x_ptr + ((b.to(tl.int64) * seq + s64) * heads + h) * dim + d[None, :]
    dst = out_ptr + (bh.to(tl.int64) * seq + s64) * dim + d[None, :]
    tl.store(dst, tl.load(src, mask=mask), mask=mask)


def permute_0213(x: torch.Tensor) -> torch.Tensor:
    b, s, h, d = x.shape
    x = x.contiguous()
    out = torch.empty((b, h, s, d), dtype=x.dtype, device=x.device)
    block_d = triton.next_power_of_2(d)
    block_s = max(1, 4096 // block_d)
    grid = (b * h, triton.cdiv(s, block_s))
    permute_kernel[grid](x, out, s, h, d, BLOCK_S=block_s, BLOCK_D=block_d, num_warps=4)
    return out
