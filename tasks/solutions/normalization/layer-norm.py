"""Reference solution for normalization/layer-norm: one program per row, two-pass statistics.

The variance is taken around the mean (not E[x^2] - E[x]^2), which keeps rows with a large mean
accurate. A row of up to ONE_BLOCK[0] elements is loaded once into registers (ONE_BLOCK[1] elements a
thread, at most 16 warps), so both statistics and the output come from one read of x instead of three
(the bench rows are 8192 half or 4096 float32 elements, 16 KiB). Longer rows loop over BLOCK elements
three times, the later sweeps usually from L2.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
ONE_BLOCK: Tiles = (16384, 8)
"""(longest row held in registers, elements a thread)."""
LOOP: Tiles = (4096, 8)
"""(BLOCK, num_warps) for longer rows."""


@triton.jit
def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                          BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_out + cols, (diff * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_loop_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                           BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        diff = tl.where(cols < n_cols, x - mean, 0.0)
        acc += diff * diff
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    longest, per_thread = ONE_BLOCK
    if n <= longest:
        block = triton.next_power_of_2(n)
        warps = min(16, max(4, block // (32 * per_thread)))
        layer_norm_row_kernel[(m,)](x, weight, bias, out, n, x.stride(0), out.stride(0), eps, BLOCK=block,
                                    num_warps=warps)
        return out
    block, warps = LOOP
    layer_norm_loop_kernel[(m,)](x, weight, bias, out, n, x.stride(0), out.stride(0), eps, BLOCK=block,
                                 num_warps=warps)
    return out
