"""Reference solution for fusion/add-layer-norm: one pass computes the sum, stores it, and normalises it.

Each program owns ROWS whole rows in registers (several short rows per program, one long row): x + residual
is formed in float32, written once as h, and its mean and variance (two reductions over the registers, so
no E[x^2] - E[x]^2 cancellation) give y. Every input is read once and each output written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_layer_norm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, h_ptr, y_ptr, M, N, eps, ROWS: tl.constexpr,
                          BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = tl.arange(0, BLOCK)
    col_ok = offs < N
    mask = (rows < M)[:, None] & col_ok[None, :]
    at = rows[:, None].to(tl.int64) * N + offs[None, :]
    h = (tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32)
         + tl.load(r_ptr + at, mask=mask, other=0.0).to(tl.float32))
    tl.store(h_ptr + at, h.to(h_ptr.dtype.element_ty), mask=mask)
    mean = tl.sum(h, axis=1) / N
    d = tl.where(mask, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / N + eps)
    w = tl.load(w_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + at, y.to(y_ptr.dtype.element_ty), mask=mask)


def add_layer_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.shape
    h = torch.empty_like(x)
    y = torch.empty_like(x)
    block = max(triton.next_power_of_2(n), 16)
    rows = min(max(4096 // block, 1), 64)
    warps = 8 if rows * block >= 4096 else 4
    add_layer_norm_kernel[(triton.cdiv(m, rows),)](x, residual, weight, bias, h, y, m, n, eps, ROWS=rows,
                                                   BLOCK=block, num_warps=warps)
    return h, y
