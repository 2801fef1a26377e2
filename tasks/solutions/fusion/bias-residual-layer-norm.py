"""Reference solution for fusion/bias-residual-layer-norm: bias, residual and layer norm in one pass.

Each program owns ROWS whole rows in registers: x + bias + residual in float32, then mean and variance by
two reductions over the registers (no E[x^2] - E[x]^2 cancellation) and the affine map. Nothing but the
output goes back to memory.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def bias_residual_ln_kernel(x_ptr, bias_ptr, r_ptr, w_ptr, b_ptr, y_ptr, M, N, eps, ROWS: tl.constexpr,
                            BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = tl.arange(0, BLOCK)
    col_ok = offs < N
    mask = (rows < M)[:, None] & col_ok[None, :]
    at = rows[:, None].to(tl.int64) * N + offs[None, :]
    bias = tl.load(bias_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    h = (tl.load(x_ptr + at, mask=mask, other=0.0).to(tl.float32) + bias[None, :]
         + tl.load(r_ptr + at, mask=mask, other=0.0).to(tl.float32))
    mean = tl.sum(tl.where(mask, h, 0.0), axis=1) / N
    d = tl.where(mask, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / N + eps)
    w = tl.load(w_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=col_ok, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + at, y.to(y_ptr.dtype.element_ty), mask=mask)


def bias_residual_layer_norm(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor,
                             norm_weight: torch.Tensor, norm_bias: torch.Tensor, eps: float = 1e-5
                             ) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    block = max(triton.next_power_of_2(n), 16)
    rows = min(max(4096 // block, 1), 64)
    warps = 8 if rows * block >= 4096 else 4
    bias_residual_ln_kernel[(triton.cdiv(m, rows),)](x, bias, residual, norm_weight, norm_bias, y, m, n, eps,
                                                     ROWS=rows, BLOCK=block, num_warps=warps)
    return y
