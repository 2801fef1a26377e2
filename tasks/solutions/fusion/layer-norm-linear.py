"""Reference solution for fusion/layer-norm-linear: a normalising prologue, then a plain tiled GEMM.

A small kernel computes each row's mean and 1/std in float32 (two passes over the row, so a large mean
does not cancel) and writes the normalised row, rounded to the input dtype, once. The GEMM then streams
those rows and the weight with unmasked 16-byte asynchronous copies straight into wgmma (sm_90a). Folding
the normalisation into the GEMM's A loads instead sends every A tile through registers on its way to
shared memory, which stalls the copy pipeline at every K step; the prologue costs one extra write and
read of M x K elements, a few percent of the GEMM at the bench shapes.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
LARGE: Tiles = (128, 256, 64, 8, 3)
"""M * N >= 2048^2; scripts/triton_ref_sweep.py times the alternatives."""
SMALL: Tiles = (64, 64, 32, 4, 3)


@triton.jit
def layer_norm_kernel(x_ptr, g_ptr, beta_ptr, xn_ptr, M, K, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    base = rows[:, None].to(tl.int64) * K
    total = tl.zeros((ROWS, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = row_ok[:, None] & (offs < K)[None, :]
        total += tl.load(x_ptr + base + offs[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=1) / K
    sq = tl.zeros((ROWS, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = row_ok[:, None] & (offs < K)[None, :]
        d = tl.load(x_ptr + base + offs[None, :], mask=mask, other=0.0).to(tl.float32) - mean[:, None]
        sq += tl.where(mask, d * d, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=1) / K + eps)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = row_ok[:, None] & (offs < K)[None, :]
        x = tl.load(x_ptr + base + offs[None, :], mask=mask, other=0.0).to(tl.float32)
        g = tl.load(g_ptr + offs, mask=offs < K, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + offs, mask=offs < K, other=0.0).to(tl.float32)
        y = (x - mean[:, None]) * rstd[:, None] * g[None, :] + beta[None, :]
        tl.store(xn_ptr + base + offs[None, :], y.to(xn_ptr.dtype.element_ty), mask=mask)


@triton.jit
def linear_kernel(a_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_tile = w_ptr + offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            a = tl.load(a_tile)
            b = tl.load(w_tile)
        else:
            k_ok = offs_k < K - k
            a = tl.load(a_tile, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
            b = tl.load(w_tile, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K
        w_tile += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def layer_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, norm_bias: torch.Tensor,
                      weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    xn = torch.empty_like(x)
    layer_norm_kernel[(triton.cdiv(m, 4),)](x, norm_weight, norm_bias, xn, m, k, eps, ROWS=4,
                                            BLOCK=min(1024, max(16, triton.next_power_of_2(k))), num_warps=4)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    linear_kernel[grid](xn, weight, bias, out, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                        EVEN=even, num_warps=warps, num_stages=stages)
    return out
