"""Reference solution for normalization/add-rms-norm: the residual sum is rounded once and reused.

h = x + residual is rounded to the input dtype and stored, and sum(h^2) is accumulated in float32 from
the rounded values, so out is exactly the RMS norm of the h that is returned. A row of up to
ONE_BLOCK[0] elements stays in registers (ONE_BLOCK[1] elements a thread, at most 16 warps) between the
statistics and the output: x and residual are read once and h is never read back, four row-sized
transfers instead of five. Longer rows store h in a first sweep and read it back in a second.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
ONE_BLOCK: Tiles = (16384, 16)
"""(longest row held in registers, elements a thread)."""
LOOP: Tiles = (4096, 8)
"""(BLOCK, num_warps) for longer rows."""


@triton.jit
def add_rms_norm_row_kernel(x_ptr, r_ptr, w_ptr, out_ptr, h_ptr, n_cols, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + offs + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs + cols, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + offs + cols, h, mask=mask)
    hf = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs + cols, (hf * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_rms_norm_loop_kernel(x_ptr, r_ptr, w_ptr, out_ptr, h_ptr, n_cols, eps, BLOCK: tl.constexpr):
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
    out = torch.empty_like(x)
    h = torch.empty_like(x)
    longest, per_thread = ONE_BLOCK
    if n <= longest:
        block = triton.next_power_of_2(n)
        warps = min(16, max(4, block // (32 * per_thread)))
        add_rms_norm_row_kernel[(m,)](x, residual, weight, out, h, n, eps, BLOCK=block, num_warps=warps)
        return out, h
    block, warps = LOOP
    add_rms_norm_loop_kernel[(m,)](x, residual, weight, out, h, n, eps, BLOCK=block, num_warps=warps)
    return out, h
