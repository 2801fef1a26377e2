"""Reference solution for fusion/mlp-gelu: two tl.dot GEMMs with fused bias (+ gelu) epilogues.

The hidden activation gelu(x @ w1.T + b1) is computed on the float32 accumulator and stored once in the
input dtype; the second GEMM adds b2 in its epilogue. Bench tiles (LARGE) lower to wgmma on sm_90a;
when the tiles divide the problem (EVEN) the loads carry no masks, so the pipeliner issues plain 16-byte
asynchronous copies.
tl.assume(K > 0) removes the zero-trip path around the K loop, whose separate accumulator
initialisation made ptxas serialise the wgmma pipeline (its C7515 warning).
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
LARGE: Tiles = (128, 256, 64, 8, 4)
"""M * N >= 2048^2: matmul/matmul's tiles (scripts/triton_ref_sweep.py)."""
SMALL: Tiles = (64, 64, 32, 4, 3)


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, GELU: tl.constexpr, EVEN: tl.constexpr):
    tl.assume(K > 0)
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
    x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    w_offs = offs_n[None, :].to(tl.int64) * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            a = tl.load(x_ptr + x_offs)
            b = tl.load(w_ptr + w_offs)
        else:
            k_left = K - k
            a = tl.load(x_ptr + x_offs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(w_ptr + w_offs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        x_offs += BLOCK_K
        w_offs += BLOCK_K
    y = acc + tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    if GELU:
        inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
        y = 0.5 * y * (2.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0))  # 1 + tanh(inner)
    tl.store(out_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, gelu: bool) -> torch.Tensor:
    m, k = x.shape
    n = w.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    linear_kernel[grid](x, w, b, out, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, GELU=gelu,
                        EVEN=even, num_warps=warps, num_stages=stages)
    return out


def mlp_gelu(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor
             ) -> torch.Tensor:
    hidden = _linear(x, w1, b1, gelu=True)
    return _linear(hidden, w2, b2, gelu=False)
