"""Reference solution for fusion/rope-interleaved: interleaved rotary embedding, blocks of head-rows.

q and k are viewed as rows of D features, one row per (token, head); the row's position is
(row // heads) % S. A program rotates BLOCK_R rows. Each row is read as ONE contiguous (2 * BLOCK_H)
vector (16-byte loads), reshaped to (BLOCK_H, 2) and split into the even/odd halves in registers; the
rotated halves are joined back and stored contiguously. Loading x[0::2] and x[1::2] as two strided
tiles instead gives 2-byte loads and half-sector stores, an order of magnitude off the copy rate.
cos/sin rows are gathered per row (at most a few positions per program: they stay in L1/L2).
One launch for q, one for k; each element is read and written once.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]

# (rows per program, num_warps)
ROWS: Tiles = (32, 4)


@triton.jit
def rope_interleaved_kernel(x_ptr, cos_ptr, sin_ptr, o_ptr, R, H, S, HALF, BLOCK_R: tl.constexpr,
                            BLOCK_H: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    pairs = tl.arange(0, BLOCK_H)
    pair_mask = row_ok[:, None] & (pairs < HALF)[None, :]
    pos = (rows // H) % S
    table = pos[:, None] * HALF + pairs[None, :]
    c = tl.load(cos_ptr + table, mask=pair_mask, other=0.0)
    s = tl.load(sin_ptr + table, mask=pair_mask, other=0.0)

    feats = tl.arange(0, 2 * BLOCK_H)
    at = rows[:, None].to(tl.int64) * (2 * HALF) + feats[None, :]
    mask = row_ok[:, None] & (feats < 2 * HALF)[None, :]
    x = tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32)
    even, odd = tl.split(tl.reshape(x, (BLOCK_R, BLOCK_H, 2)))
    out = tl.reshape(tl.join(even * c - odd * s, odd * c + even * s), (BLOCK_R, 2 * BLOCK_H))
    tl.store(o_ptr + at, out.to(o_ptr.dtype.element_ty), mask=mask)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    b, s, h, d = x.shape
    out = torch.empty_like(x)
    rows = b * s * h
    block_h = triton.next_power_of_2(d // 2)
    block_r, warps = ROWS
    block_r = max(min(block_r, 8192 // block_h), 1)
    rope_interleaved_kernel[(triton.cdiv(rows, block_r),)](x, cos, sin, out, rows, h, s, d // 2,
                                                           BLOCK_R=block_r, BLOCK_H=block_h, num_warps=warps)
    return out


def rope_interleaved(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    return _rotate(q, cos, sin), _rotate(k, cos, sin)
