"""Reference solution for fusion/rms-norm-linear: row 1/rms, then a GEMM that normalises A tiles.

A small kernel computes each row's 1/sqrt(mean(x^2) + eps) in float32; the GEMM scales every A tile by it
and by the norm weight as the tile is loaded and feeds the rounded tile to tl.dot, so the normalised
activations never go to memory. Bench tiles (LARGE) lower to wgmma on sm_90a; when the tiles divide the
problem (EVEN) the loads carry no masks.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
LARGE: Tiles = (128, 256, 64, 8, 3)
"""M * N >= 2048^2 (scripts/triton_ref_sweep.py times the alternatives)."""
SMALL: Tiles = (64, 64, 32, 4, 3)


@triton.jit
def row_rstd_kernel(x_ptr, rstd_ptr, M, K, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    sq = tl.zeros((ROWS, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + rows[:, None].to(tl.int64) * K + offs[None, :],
                    mask=row_ok[:, None] & (offs < K)[None, :], other=0.0).to(tl.float32)
        sq += v * v
    tl.store(rstd_ptr + rows, 1.0 / tl.sqrt(tl.sum(sq, axis=1) / K + eps), mask=row_ok)


@triton.jit
def rms_linear_kernel(x_ptr, rstd_ptr, g_ptr, w_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      EVEN: tl.constexpr):
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
    rstd = tl.load(rstd_ptr + offs_m, mask=offs_m < M, other=0.0)
    x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            x = tl.load(x_ptr + x_offs)
            g = tl.load(g_ptr + k + offs_k).to(tl.float32)
            b = tl.load(w_ptr + w_offs)
        else:
            k_ok = offs_k < K - k
            x = tl.load(x_ptr + x_offs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
            g = tl.load(g_ptr + k + offs_k, mask=k_ok, other=0.0).to(tl.float32)
            b = tl.load(w_ptr + w_offs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        a = x.to(tl.float32) * rstd[:, None] * g[None, :]
        acc = tl.dot(a.to(b.dtype), b, acc)
        x_offs += BLOCK_K
        w_offs += BLOCK_K
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def rms_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor,
                    eps: float = 1e-6) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    x, weight = x.contiguous(), weight.contiguous()
    rstd = torch.empty((m,), dtype=torch.float32, device=x.device)
    row_rstd_kernel[(triton.cdiv(m, 16),)](x, rstd, m, k, eps, ROWS=16, BLOCK=256, num_warps=4)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    rms_linear_kernel[grid](x, rstd, norm_weight, weight, out, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                            GROUP_M=8, EVEN=even, num_warps=warps, num_stages=stages)
    return out
