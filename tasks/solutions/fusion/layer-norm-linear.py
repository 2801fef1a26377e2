"""Reference solution for fusion/layer-norm-linear: row statistics, then a GEMM that normalises A tiles.

A small kernel computes each row's mean and 1/std in float32 (two passes over the row, so a large mean
does not cancel); the GEMM applies (x - mean) * rstd * gamma + beta to every A tile as it is loaded and
feeds the rounded tile to tl.dot, so the normalised activations never go to memory. Bench tiles
(128x256x64, 8 warps) lower to wgmma on sm_90a.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, mean_ptr, rstd_ptr, M, K, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    base = x_ptr + rows[:, None].to(tl.int64) * K
    total = tl.zeros((ROWS, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = row_ok[:, None] & (offs < K)[None, :]
        total += tl.load(base + offs[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=1) / K
    sq = tl.zeros((ROWS, BLOCK), tl.float32)
    for k in range(0, K, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = row_ok[:, None] & (offs < K)[None, :]
        d = tl.load(base + offs[None, :], mask=mask, other=0.0).to(tl.float32) - mean[:, None]
        sq += tl.where(mask, d * d, 0.0)
    tl.store(mean_ptr + rows, mean, mask=row_ok)
    tl.store(rstd_ptr + rows, 1.0 / tl.sqrt(tl.sum(sq, axis=1) / K + eps), mask=row_ok)


@triton.jit
def ln_linear_kernel(x_ptr, mean_ptr, rstd_ptr, g_ptr, beta_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
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
    mean = tl.load(mean_ptr + offs_m, mask=offs_m < M, other=0.0)
    rstd = tl.load(rstd_ptr + offs_m, mask=offs_m < M, other=0.0)
    x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k
        x = tl.load(x_ptr + x_offs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        g = tl.load(g_ptr + k + offs_k, mask=k_ok, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + k + offs_k, mask=k_ok, other=0.0).to(tl.float32)
        a = (x.to(tl.float32) - mean[:, None]) * rstd[:, None] * g[None, :] + beta[None, :]
        b = tl.load(w_ptr + w_offs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a.to(b.dtype), b, acc)
        x_offs += BLOCK_K
        w_offs += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def layer_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, norm_bias: torch.Tensor,
                      weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    x, weight = x.contiguous(), weight.contiguous()
    mean = torch.empty((m,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((m,), dtype=torch.float32, device=x.device)
    row_stats_kernel[(triton.cdiv(m, 16),)](x, mean, rstd, m, k, eps, ROWS=16, BLOCK=256, num_warps=4)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m * n >= 2048 * 2048:
        bm, bn, bk, warps = 128, 256, 64, 8
    else:
        bm, bn, bk, warps = 64, 64, 32, 4
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    ln_linear_kernel[grid](x, mean, rstd, norm_weight, norm_bias, weight, bias, out, m, n, k,
                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=3)
    return out
