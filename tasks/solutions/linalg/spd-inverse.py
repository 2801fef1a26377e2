"""Reference solution for linalg/spd-inverse: the symmetric sweep, one matrix per program, one row per thread.

The default (ALGO = 1) applies the sweep operator (Gauss-Jordan elimination that keeps the matrix
symmetric) to every pivot in order; after the last one the tile holds -A^-1. For an SPD matrix the
pivots are the diagonal entries of the successive Schur complements, all positive, so no pivoting
is needed and the error is that of a Cholesky-based inverse (cond(A) <= ~6 here). It does n^3
FMAs, the same as factor + triangular inverse + L^-T L^-1, but in a single pass whose only
communication is one broadcast per pivot:

Thread i holds row i in registers (n <= 64: one warp for n <= 32, two for n = 64) and the pivot loop
is unrolled with n a compile-time constant, so column k is a fixed register. Sweeping pivot k needs
row k, which by symmetry is column k: one shared-memory broadcast of a value per thread. Then
A[i, j] -= (A[i, k] / d) A[k, j] for j != k (for i = k the multiplier is 1 - 1/d, which leaves
A[k, j] / d), and column k becomes A[i, k] / d, with -1 / d on the diagonal. That is ~n^2 FMAs per
thread: ~1.8K warp instructions per 32x32 matrix and ~12K per 64x64 one, against ~44K and ~336K
for the three-stage kernel below (ALGO = 0), whose every step reduces and selects over the whole
tile across warps.

Layout: the tile is addressed through a column index the compiler cannot prove contiguous
((c * (BLOCK + 1)) & (BLOCK - 1) == c), so Triton gives each thread one whole row (sizePerThread 1,
32 lanes down the rows) instead of 4-wide vectors spread over 8 lanes; A is symmetric, so the kernel
loads A^T and each load instruction reads one contiguous row of A across the warp.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
ALGO: Tiles = (1,)
"""1: unrolled symmetric sweep, one row per thread; 0: Cholesky, L^-1 and L^-T L^-1 over the whole tile."""


@triton.jit
def spd_inverse_sweep_kernel(a_ptr, out_ptr, stride_ab, stride_ar, stride_ac, stride_ob, stride_or,
                             stride_oc, N: tl.constexpr, BLOCK: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < N) & (cols < N)
    opaque_rows = (rows * (BLOCK + 1)) & (BLOCK - 1)
    opaque_cols = (cols * (BLOCK + 1)) & (BLOCK - 1)
    # A^T == A: element (i, j) of the tile is read from A[j, i], so a warp's load covers one row of A.
    a = tl.load(a_ptr + mat * stride_ab + opaque_cols * stride_ar + opaque_rows * stride_ac, mask=mask,
                other=0.0)
    for k in tl.static_range(N):
        col = tl.sum(tl.where(cols == k, a, 0.0), axis=1)
        col_as_row = col[None, :]
        pivot = tl.sum(tl.where(cols == k, col_as_row, 0.0), axis=1, keep_dims=True)
        inv_pivot = 1.0 / pivot
        scaled = col[:, None] * inv_pivot
        multiplier = tl.where(rows == k, 1.0 - inv_pivot, scaled)
        a = tl.where(cols == k, tl.where(rows == k, -inv_pivot, scaled), a - multiplier * col_as_row)
    out = out_ptr + mat * stride_ob + rows * stride_or + cols * stride_oc
    tl.store(out, -a, mask=mask)


@triton.jit
def spd_inverse_cholesky_kernel(a_ptr, out_ptr, N, stride_ab, stride_ar, stride_ac, stride_ob, stride_or,
                                stride_oc, BLOCK: tl.constexpr):
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
    if ALGO[0] == 1:
        spd_inverse_sweep_kernel[(batch,)](a, out, a.stride(0), a.stride(1), a.stride(2), out.stride(0),
                                           out.stride(1), out.stride(2), N=n, BLOCK=block,
                                           num_warps=max(1, block // 32))
    else:
        spd_inverse_cholesky_kernel[(batch,)](a, out, n, a.stride(0), a.stride(1), a.stride(2), out.stride(0),
                                              out.stride(1), out.stride(2), BLOCK=block,
                                              num_warps=4 if block <= 32 else 8)
    return out
