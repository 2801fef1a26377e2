"""Reference solution for linalg/cholesky: one matrix per program, one row per thread, fully unrolled.

The default (ALGO = 1) is a right-looking factorization in which thread i holds row i of the matrix
in registers (n <= 64: one warp for n <= 32, two for n = 64). n is a compile-time constant and the
column loop is unrolled, so "column j" is a fixed register in every thread: extracting it, writing
the finished L column back and restricting the rank-1 update to the columns right of j all fold
away at compile time, and step j costs (n - 1 - j) FMAs per thread. The only communication per step
is one broadcast of column j (through shared memory), which by symmetry is also row j: every
thread then updates A[i, k] -= A[i, j] A[k, j] / A[j, j] for k > j and scales its entry of column j
by 1 / sqrt(A[j, j]). Rows above the diagonal are updated too (no lane-dependent masks); the final
store writes zeros there. That is ~1.4K warp instructions per 32x32 matrix and ~8K per 64x64 one,
against ~31K and ~245K for the column-by-column kernel below (ALGO = 0), whose every step reduces
and selects over the whole BLOCK x BLOCK tile across warps.

Layout: the tile is addressed through a column index the compiler cannot prove contiguous
((c * (BLOCK + 1)) & (BLOCK - 1) == c), so Triton gives each thread one whole row (sizePerThread 1,
32 lanes down the rows) instead of 4-wide vectors spread over 8 lanes; and since A is symmetric the
kernel loads A^T, so each load instruction reads one contiguous row of A across the warp.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
ALGO: Tiles = (1,)
"""1: unrolled right-looking, one row per thread; 0: column-by-column over the whole tile."""


@triton.jit
def cholesky_rows_kernel(a_ptr, l_ptr, stride_ab, stride_ar, stride_ac, stride_lb, stride_lr, stride_lc,
                         N: tl.constexpr, BLOCK: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < N) & (cols < N)
    opaque_rows = (rows * (BLOCK + 1)) & (BLOCK - 1)
    opaque_cols = (cols * (BLOCK + 1)) & (BLOCK - 1)
    # A^T == A: element (i, k) of the tile is read from A[k, i], so a warp's load covers one row of A.
    a = tl.load(a_ptr + mat * stride_ab + opaque_cols * stride_ar + opaque_rows * stride_ac, mask=mask,
                other=0.0)
    for j in tl.static_range(N):
        col = tl.sum(tl.where(cols == j, a, 0.0), axis=1)
        col_as_row = col[None, :]
        pivot = tl.sum(tl.where(cols == j, col_as_row, 0.0), axis=1, keep_dims=True)
        inv_d = 1.0 / tl.sqrt(pivot)
        scaled = col[:, None] * (inv_d * inv_d)
        a = tl.where(cols > j, a - scaled * col_as_row, a)
        a = tl.where(cols == j, col[:, None] * inv_d, a)
    out = l_ptr + mat * stride_lb + rows * stride_lr + cols * stride_lc
    tl.store(out, tl.where(cols <= rows, a, 0.0), mask=mask)


@triton.jit
def cholesky_columns_kernel(a_ptr, l_ptr, N, stride_ab, stride_ar, stride_ac, stride_lb, stride_lr,
                            stride_lc, BLOCK: tl.constexpr):
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
    if ALGO[0] == 1:
        cholesky_rows_kernel[(batch,)](a, out, a.stride(0), a.stride(1), a.stride(2), out.stride(0),
                                       out.stride(1), out.stride(2), N=n, BLOCK=block,
                                       num_warps=max(1, block // 32))
    else:
        cholesky_columns_kernel[(batch,)](a, out, n, a.stride(0), a.stride(1), a.stride(2), out.stride(0),
                                          out.stride(1), out.stride(2), BLOCK=block,
                                          num_warps=4 if block <= 32 else 8)
    return out
