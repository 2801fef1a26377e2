"""Reference solution for normalization/layer-norm-no-affine: the (B, T, D) input is B*T rows.

Mean first, then the variance around it (exact for rows with a large mean), then the output.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_plain_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row_start + cols, ((x - mean) * rstd).to(out_ptr.dtype.element_ty), mask=mask)


def layer_norm_no_affine(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    d = x.shape[-1]
    rows = x.numel() // d
    x = x.contiguous()
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(d), 4096)
    warps = 4 if block <= 1024 else 8
    layer_norm_plain_kernel[(rows,)](x, out, d, eps, BLOCK=block, num_warps=warps)
    return out
