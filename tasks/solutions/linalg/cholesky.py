"""Reference solution for linalg/cholesky: one matrix per program, column by column in registers.

The factor L (n x n, n <= 64) lives in registers. Column j is A[:, j] - L @ L[j, :]^T (columns >= j
of L are still zero, so the product only sums k < j); its diagonal entry c_jj gives d = sqrt(c_jj),
and the entries on and below the diagonal are divided by d (c_jj / d = d). Rows and columns are
picked out with masks and reductions, since registers cannot be indexed dynamically. n steps of
O(n^2) each; A is read one column at a time (its entries above the diagonal are masked off) and L
is written once, with exact zeros above the diagonal.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def cholesky_kernel(a_ptr, l_ptr, N, stride_ab, stride_ar, stride_ac, stride_lb, stride_lr, stride_lc,
                    BLOCK: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    rows_2d = rows[:, None]
    cols_2d = cols[None, :]
    row_mask = rows < N
    a_col_ptrs = a_ptr + mat * stride_ab + rows * stride_ar
    L = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for j in range(0, N):
        # Column j of A (A is symmetric; entries above the diagonal are discarded below).
        a_col = tl.load(a_col_ptrs, mask=row_mask, other=0.0)
        l_row = tl.sum(tl.where(rows_2d == j, L, 0.0), axis=0)
        col = a_col - tl.sum(L * l_row[None, :], axis=1)
        d = tl.sqrt(tl.sum(tl.where(rows == j, col, 0.0), axis=0))
        new_col = tl.where(rows >= j, col / d, 0.0)
        L = tl.where(cols_2d == j, new_col[:, None], L)
        a_col_ptrs += stride_ac
    out = l_ptr + mat * stride_lb + rows[:, None] * stride_lr + cols[None, :] * stride_lc
    tl.store(out, L, mask=(rows[:, None] < N) & (cols[None, :] < N))


def cholesky(a: torch.Tensor) -> torch.Tensor:
    batch, n, _ = a.shape
    out = torch.empty((batch, n, n), dtype=torch.float32, device=a.device)
    block = max(16, triton.next_power_of_2(n))
    cholesky_kernel[(batch,)](a, out, n, a.stride(0), a.stride(1), a.stride(2), out.stride(0), out.stride(1),
                              out.stride(2), BLOCK=block, num_warps=4 if block <= 32 else 8)
    return out
