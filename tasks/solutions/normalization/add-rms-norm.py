"""Reference solution for normalization/add-rms-norm: the residual sum is written once and reused.

Sweep one adds x and residual, stores h (in the input dtype) and accumulates sum(h^2) in float32
from the stored (rounded) values; sweep two reads h back and normalizes it, so out is exactly the
RMS norm of the h that is returned.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_rms_norm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, h_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        h = (x + r).to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row_start + cols, h, mask=mask)
        hf = h.to(tl.float32)
        acc += hf * hf
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        h = tl.load(h_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row_start + cols, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                 eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.shape
    x, residual = x.contiguous(), residual.contiguous()
    out = torch.empty_like(x)
    h = torch.empty_like(x)
    block = min(triton.next_power_of_2(n), 4096)
    warps = 4 if block <= 1024 else 8
    add_rms_norm_kernel[(m,)](x, residual, weight, out, h, n, eps, BLOCK=block, num_warps=warps)
    return out, h
