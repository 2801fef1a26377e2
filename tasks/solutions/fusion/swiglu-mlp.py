"""Reference solution for fusion/swiglu-mlp: a gated GEMM kernel, then the down-projection GEMM.

The first kernel computes x @ w_gate.T and x @ w_up.T for the same tile with two accumulators and stores
silu(g) * u (the only intermediate, in the input dtype); the second is a plain tl.dot GEMM against
w_down. Bench tiles lower to wgmma on sm_90a. tl.assume(K > 0) in the down-projection keeps ptxas from
serialising its wgmma pipeline (its C7515 warning): without it the accumulator's initialisation is
duplicated into the zero-trip path of the K loop.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    return first_m + (pid % group_size) % rows_in_group, (pid % group_size) // rows_in_group


@triton.jit
def gate_up_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(x_ptr + x_offs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        w_mask = (offs_k[:, None] < k_left) & (offs_n[None, :] < N)
        acc_g = tl.dot(a, tl.load(wg_ptr + w_offs, mask=w_mask, other=0.0), acc_g)
        acc_u = tl.dot(a, tl.load(wu_ptr + w_offs, mask=w_mask, other=0.0), acc_u)
        x_offs += BLOCK_K
        w_offs += BLOCK_K
    h = acc_g / (1.0 + tl.exp(-acc_g)) * acc_u
    tl.store(h_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], h.to(h_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def down_kernel(h_ptr, w_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    tl.assume(K > 0)
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    h_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(h_ptr + h_offs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(w_ptr + w_offs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        h_offs += BLOCK_K
        w_offs += BLOCK_K
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def swiglu_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor
               ) -> torch.Tensor:
    m, hidden = x.shape
    ffn = w_gate.shape[0]
    h = torch.empty((m, ffn), dtype=x.dtype, device=x.device)
    out = torch.empty((m, hidden), dtype=x.dtype, device=x.device)
    big = m * ffn >= 2048 * 2048
    bm, bn, bk, warps = (128, 128, 64, 8) if big else (64, 64, 32, 4)
    grid = (triton.cdiv(m, bm) * triton.cdiv(ffn, bn),)
    gate_up_kernel[grid](x, w_gate, w_up, h, m, ffn, hidden, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                         num_warps=warps, num_stages=3)
    bm, bn, bk, warps = (128, 256, 64, 8) if big else (64, 64, 32, 4)
    grid = (triton.cdiv(m, bm) * triton.cdiv(hidden, bn),)
    down_kernel[grid](h, w_down, out, m, hidden, ffn, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                      num_warps=warps, num_stages=3)
    return out
