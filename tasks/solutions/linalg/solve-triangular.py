"""Reference solution for linalg/solve-triangular: row-by-row forward substitution in registers.

One program per (matrix, block of right-hand-side columns) keeps the solution block X (n x BLOCK_K,
n <= 128) in registers. Step r loads the strictly lower part of row r of L (the upper triangle and,
for unit triangles, the diagonal are never read), forms b_r - L[r, :r] @ X[:r] with a
broadcast-multiply and a reduction over rows, divides by L[r, r] unless the diagonal is unit, and
writes the new row into X. n steps of O(n * BLOCK_K) work each; the L row and b row loads are the
only memory traffic besides the final store.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def trsv_rows_kernel(l_ptr, b_ptr, x_ptr, N, K, stride_lb, stride_lr, stride_lc, stride_bb, stride_br,
                     stride_bc, stride_xb, stride_xr, stride_xc, UNIT: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    pid_k = tl.program_id(1)
    rows = tl.arange(0, BLOCK_N)
    cols = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    l_row_ptrs = l_ptr + mat * stride_lb + rows * stride_lc
    l_diag_ptr = l_ptr + mat * stride_lb
    b_row_ptrs = b_ptr + mat * stride_bb + cols * stride_bc
    col_mask = cols < K
    x = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for r in range(0, N):
        l_row = tl.load(l_row_ptrs, mask=rows < r, other=0.0)
        b_row = tl.load(b_row_ptrs, mask=col_mask, other=0.0)
        x_row = b_row - tl.sum(l_row[:, None] * x, axis=0)
        if not UNIT:
            x_row = x_row / tl.load(l_diag_ptr)
        x = tl.where(rows[:, None] == r, x_row[None, :], x)
        l_row_ptrs += stride_lr
        l_diag_ptr += stride_lr + stride_lc
        b_row_ptrs += stride_br
    out = x_ptr + mat * stride_xb + rows[:, None] * stride_xr + cols[None, :] * stride_xc
    tl.store(out, x, mask=(rows[:, None] < N) & (cols[None, :] < K))


def solve_triangular(a: torch.Tensor, b: torch.Tensor, unitriangular: bool = False) -> torch.Tensor:
    batch, n, _ = a.shape
    k = b.shape[2]
    x = torch.empty((batch, n, k), dtype=torch.float32, device=b.device)
    block_n = triton.next_power_of_2(n)
    block_k = min(32, triton.next_power_of_2(k))
    grid = (batch, triton.cdiv(k, block_k))
    trsv_rows_kernel[grid](a, b, x, n, k, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1),
                           b.stride(2), x.stride(0), x.stride(1), x.stride(2), UNIT=bool(unitriangular),
                           BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4 if block_n <= 64 else 8)
    return x
