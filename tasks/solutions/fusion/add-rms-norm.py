"""Reference solution for fusion/add-rms-norm: one pass computes the sum, stores it, and RMS-normalises it.

Each program owns ROWS whole rows in registers (several short rows per program, one long row):
x + residual in float32, written once as h, then h * rsqrt(mean(h^2) + eps) * weight. Every input is read
once and each output written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_rms_norm_kernel(x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, M, N, eps, ROWS: tl.constexpr,
                        BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = tl.arange(0, BLOCK)
    col_ok = offs < N
    mask = (rows < M)[:, None] & col_ok[None, :]
    at = rows[:, None].to(tl.int64) * N + offs[None, :]
    h = (tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32)
         + tl.load(r_ptr + at, mask=mask, other=0.0).to(tl.float32))
    tl.store(h_ptr + at, h.to(h_ptr.dtype.element_ty), mask=mask)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)
    w = tl.load(w_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + at, (h * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.shape
    h = torch.empty_like(x)
    y = torch.empty_like(x)
    block = max(triton.next_power_of_2(n), 16)
    rows = min(max(4096 // block, 1), 64)
    warps = 8 if rows * block >= 4096 else 4
    add_rms_norm_kernel[(triton.cdiv(m, rows),)](x, residual, weight, h, y, m, n, eps, ROWS=rows, BLOCK=block,
                                                 num_warps=warps)
    return h, y
