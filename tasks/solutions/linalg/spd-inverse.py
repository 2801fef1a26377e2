"""Reference solution for linalg/spd-inverse: Cholesky, triangular inverse and L^-T L^-1 in one program.

Each program keeps one matrix in registers (n <= 64): it factors A = L L^T column by column, then
inverts L by forward substitution against the identity (row i of X = L^-1 is
(e_i - L[i, :i] X[:i]) / L[i, i]), and finally forms A^-1 = X^T X with one IEEE-fp32 tl.dot. Three
stages of about n^3/3 operations each, no global scratch memory.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def spd_inverse_kernel(a_ptr, out_ptr, N, stride_ab, stride_ar, stride_ac, stride_ob, stride_or, stride_oc,
                       BLOCK: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    rows_2d = rows[:, None]
    cols_2d = cols[None, :]
    row_mask = rows < N
    a_col_ptrs = a_ptr + mat * stride_ab + rows * stride_ar
    # 1. A = L L^T, column by column (A is symmetric; entries above the diagonal are discarded).
    L = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for j in range(0, N):
        a_col = tl.load(a_col_ptrs, mask=row_mask, other=0.0)
        l_row = tl.sum(tl.where(rows_2d == j, L, 0.0), axis=0)
        col = a_col - tl.sum(L * l_row[None, :], axis=1)
        d = tl.sqrt(tl.sum(tl.where(rows == j, col, 0.0), axis=0))
        L = tl.where(cols_2d == j, tl.where(rows >= j, col / d, 0.0)[:, None], L)
        a_col_ptrs += stride_ac
    # 2. X = L^-1, row by row: X[i] = (e_i - L[i, :i] X[:i]) / L[i, i].
    X = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for i in range(0, N):
        l_row = tl.sum(tl.where(rows_2d == i, L, 0.0), axis=0)
        is_i = cols == i
        d = tl.sum(tl.where(is_i, l_row, 0.0), axis=0)
        t = tl.sum(tl.where(cols < i, l_row, 0.0)[:, None] * X, axis=0)
        X = tl.where(rows_2d == i, ((is_i.to(tl.float32) - t) / d)[None, :], X)
    # 3. A^-1 = X^T X.
    inv = tl.dot(tl.trans(X), X, input_precision="ieee")
    out = out_ptr + mat * stride_ob + rows[:, None] * stride_or + cols[None, :] * stride_oc
    tl.store(out, inv, mask=(rows[:, None] < N) & (cols[None, :] < N))


def spd_inverse(a: torch.Tensor) -> torch.Tensor:
    batch, n, _ = a.shape
    out = torch.empty((batch, n, n), dtype=torch.float32, device=a.device)
    block = max(16, triton.next_power_of_2(n))
    spd_inverse_kernel[(batch,)](a, out, n, a.stride(0), a.stride(1), a.stride(2), out.stride(0),
                                 out.stride(1), out.stride(2), BLOCK=block, num_warps=4 if block <= 32 else 8)
    return out
