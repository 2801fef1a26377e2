"""Reference solution for fusion/qk-norm-rope: per-head RMS norm and half-split rotary in one pass.

q and k are viewed as rows of D features, one row per (token, head); the row's position is
(row // heads) % S. A program takes BLOCK_R rows as two (BLOCK_R, D/2) halves, normalises each row by
rsqrt of its mean square over both halves, scales by the norm weight and rotates with the row's cos/sin,
all in float32. One launch for q, one for k; each element is read and written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def qk_norm_rope_kernel(x_ptr, w_ptr, cos_ptr, sin_ptr, o_ptr, R, H, S, HALF, eps, BLOCK_R: tl.constexpr,
                        BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs = tl.arange(0, BLOCK_D)
    d_ok = offs < HALF
    mask = (rows < R)[:, None] & d_ok[None, :]
    at = rows[:, None].to(tl.int64) * (2 * HALF) + offs[None, :]
    x1 = tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + at + HALF, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt((tl.sum(x1 * x1, axis=1) + tl.sum(x2 * x2, axis=1)) / (2 * HALF) + eps)
    w1 = tl.load(w_ptr + offs, mask=d_ok, other=0.0).to(tl.float32)
    w2 = tl.load(w_ptr + HALF + offs, mask=d_ok, other=0.0).to(tl.float32)
    x1 = x1 * rstd[:, None] * w1[None, :]
    x2 = x2 * rstd[:, None] * w2[None, :]
    pos = ((rows // H) % S).to(tl.int64)
    c = tl.load(cos_ptr + pos[:, None] * HALF + offs[None, :], mask=mask, other=0.0)
    s = tl.load(sin_ptr + pos[:, None] * HALF + offs[None, :], mask=mask, other=0.0)
    tl.store(o_ptr + at, (x1 * c - x2 * s).to(o_ptr.dtype.element_ty), mask=mask)
    tl.store(o_ptr + at + HALF, (x2 * c + x1 * s).to(o_ptr.dtype.element_ty), mask=mask)


def _norm_rotate(x: torch.Tensor, w: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, eps: float
                 ) -> torch.Tensor:
    b, s, h, d = x.shape
    out = torch.empty_like(x)
    rows = b * s * h
    block_d = triton.next_power_of_2(d // 2)
    block_r = max(2048 // block_d, 1)
    qk_norm_rope_kernel[(triton.cdiv(rows, block_r),)](x.contiguous(), w, cos, sin, out, rows, h, s, d // 2,
                                                       eps, BLOCK_R=block_r, BLOCK_D=block_d, num_warps=4)
    return out


def qk_norm_rope(q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor,
                 cos: torch.Tensor, sin: torch.Tensor, eps: float = 1e-6
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    return _norm_rotate(q, q_weight, cos, sin, eps), _norm_rotate(k, k_weight, cos, sin, eps)
