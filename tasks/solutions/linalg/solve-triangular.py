"""Reference solution for linalg/solve-triangular: forward substitution, one right-hand side per thread.

The default path (n <= ROWS_MAX[0]) gives each thread one column c of X, all n rows of it in
registers, and unrolls the row loop with n a compile-time constant. Step r finishes x[r, c] =
b[r, c] / L[r, r] (no division for a unit triangle) and subtracts L[i, r] x[r, c] from the rows
i > r: n - 1 - r FMAs on fixed registers, with no communication between threads at all. Column r of
L is read by every thread of the program (the same address across the warp: one broadcast
transaction, L1-resident); its masked-off part (i <= r) folds away at compile time, so nothing on or
above the diagonal is read except L[r, r] of a non-unit triangle. b and X move as whole rows across
the warp (coalesced). A 64x64 solve with 64 right-hand sides is ~12K warp instructions (2 warps,
~2K FMAs and ~2K broadcast loads each), against ~98K for the row-by-row kernel below, whose every
step reduces the whole n x BLOCK_K tile across warps. That kernel remains the path for larger n:
the unrolled code grows as n^2 and at n = 128 needs 128 registers of X per thread plus the loads
in flight, which spills.

Layout: the tile is X^T (right-hand sides down the rows) addressed through indices the compiler
cannot prove contiguous ((i * (B + 1)) & (B - 1) == i), so Triton gives each thread one whole row of
X^T (sizePerThread 1, lanes down the right-hand sides) instead of 4-wide vectors spread over lanes.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
ROWS_MAX: Tiles = (64,)
"""Largest n solved by the unrolled one-column-per-thread kernel (0: always the row-by-row kernel)."""


@triton.jit
def trsm_columns_kernel(l_ptr, b_ptr, x_ptr, K, stride_lb, stride_lr, stride_lc, stride_bb, stride_br,
                        stride_bc, stride_xb, stride_xr, stride_xc, N: tl.constexpr, UNIT: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    rhs_in_block = tl.arange(0, BLOCK_K)[:, None]
    rows = tl.arange(0, BLOCK_N)[None, :]
    rhs = tl.program_id(1) * BLOCK_K + ((rhs_in_block * (BLOCK_K + 1)) & (BLOCK_K - 1))
    opaque_rows = (rows * (BLOCK_N + 1)) & (BLOCK_N - 1)
    mask = (rhs < K) & (rows < N)
    # x[c, r] = X[r, c]: each thread owns one right-hand side.
    x = tl.load(b_ptr + mat * stride_bb + opaque_rows * stride_br + rhs * stride_bc, mask=mask, other=0.0)
    l_col_ptrs = l_ptr + mat * stride_lb + opaque_rows * stride_lr + rhs_in_block * 0
    for r in tl.static_range(N):
        x_r = tl.sum(tl.where(rows == r, x, 0.0), axis=1, keep_dims=True)
        if not UNIT:
            x_r = x_r / tl.load(l_ptr + mat * stride_lb + r * (stride_lr + stride_lc))
        l_col = tl.load(l_col_ptrs + r * stride_lc, mask=(rows > r) & (rows < N), other=0.0)
        x = tl.where(rows == r, x_r, tl.where(rows > r, x - l_col * x_r, x))
    tl.store(x_ptr + mat * stride_xb + opaque_rows * stride_xr + rhs * stride_xc, x, mask=mask)


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
    if n <= ROWS_MAX[0]:
        block_k = min(64, max(32, triton.next_power_of_2(k)))
        grid = (batch, triton.cdiv(k, block_k))
        trsm_columns_kernel[grid](a, b, x, k, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1),
                                  b.stride(2), x.stride(0), x.stride(1), x.stride(2), N=n,
                                  UNIT=bool(unitriangular), BLOCK_N=block_n, BLOCK_K=block_k,
                                  num_warps=block_k // 32)
        return x
    block_k = min(32, triton.next_power_of_2(k))
    grid = (batch, triton.cdiv(k, block_k))
    trsv_rows_kernel[grid](a, b, x, n, k, a.stride(0), a.stride(1), a.stride(2), b.stride(0), b.stride(1),
                           b.stride(2), x.stride(0), x.stride(1), x.stride(2), UNIT=bool(unitriangular),
                           BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4 if block_n <= 64 else 8)
    return x
