"""Reference solution for normalization/softmax-dim0: each program owns a strip of adjacent columns.

It walks down the rows in (BLOCK_M, BLOCK_N) tiles, so every load reads BLOCK_N contiguous
elements of a row; the column maxima and sums are kept online (rescaled when the maximum grows),
and a second walk writes the output.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_dim0_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    run_max = tl.full((BLOCK_N,), -float("inf"), tl.float32)
    run_sum = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & col_ok[None, :]
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        safe = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.sum(tl.exp(x - safe[None, :]), axis=0)
        run_max = new_max
    inv_sum = 1.0 / run_sum
    for start in range(0, n_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & col_ok[None, :]
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - run_max[None, :]) * inv_sum[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax_dim0(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    x = x.contiguous()
    out = torch.empty_like(x)
    block_n = 64 if triton.cdiv(n, 64) >= 264 else 32 if triton.cdiv(n, 32) >= 132 else 16
    block_m = 4096 // block_n  # tiles of 4096 elements: long columns take few iterations
    softmax_dim0_kernel[(triton.cdiv(n, block_n),)](x, out, m, n, BLOCK_M=block_m, BLOCK_N=block_n,
                                                    num_warps=8)
    return out
