"""Reference solution for fusion/rope-interleaved: interleaved rotary embedding, blocks of head-rows.

q and k are viewed as rows of D features, one row per (token, head); the row's position is
(row // heads) % S. A program rotates BLOCK_R rows: x1 = x[0::2] and x2 = x[1::2] are two strided
(BLOCK_R, D/2) tiles and cos/sin are gathered per row (they stay in L1/L2). One launch for q, one for k;
each element is read and written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rope_interleaved_kernel(x_ptr, cos_ptr, sin_ptr, o_ptr, R, H, S, HALF, BLOCK_R: tl.constexpr,
                            BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs = tl.arange(0, BLOCK_D)
    mask = (rows < R)[:, None] & (offs < HALF)[None, :]
    pos = ((rows // H) % S).to(tl.int64)
    c = tl.load(cos_ptr + pos[:, None] * HALF + offs[None, :], mask=mask, other=0.0)
    s = tl.load(sin_ptr + pos[:, None] * HALF + offs[None, :], mask=mask, other=0.0)
    at = rows[:, None].to(tl.int64) * (2 * HALF) + 2 * offs[None, :]
    x1 = tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + at + 1, mask=mask, other=0.0).to(tl.float32)
    tl.store(o_ptr + at, (x1 * c - x2 * s).to(o_ptr.dtype.element_ty), mask=mask)
    tl.store(o_ptr + at + 1, (x2 * c + x1 * s).to(o_ptr.dtype.element_ty), mask=mask)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    b, s, h, d = x.shape
    out = torch.empty_like(x)
    rows = b * s * h
    block_d = triton.next_power_of_2(d // 2)
    block_r = max(2048 // block_d, 1)
    rope_interleaved_kernel[(triton.cdiv(rows, block_r),)](x.contiguous(), cos, sin, out, rows, h, s, d // 2,
                                               BLOCK_R=block_r, BLOCK_D=block_d, num_warps=4)
    return out


def rope_interleaved(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
         ) -> tuple[torch.Tensor, torch.Tensor]:
    return _rotate(q, cos, sin), _rotate(k, cos, sin)
