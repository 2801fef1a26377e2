"""Reference solution for matmul/linear: x @ weight^T + bias with the bias added in the epilogue.

The weight (N, K) is read in place as K-contiguous tiles of weight^T; the bias is loaded once per
output tile and added to the float32 accumulator before the single rounding to the output dtype.
Bench-size tiles are LARGE (wgmma on sm_90a). When the tiles divide M, N and K (EVEN) the loads carry
no masks, so the pipeliner issues plain 16-byte asynchronous copies.
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
def linear_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                  stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN: tl.constexpr):
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
    x_tile = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    w_tile = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            x = tl.load(x_tile)
            w = tl.load(w_tile)
        else:
            k_left = K - k
            x = tl.load(x_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            w = tl.load(w_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_tile += BLOCK_K * stride_xk
        w_tile += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    acc += bias[None, :]
    out_tile = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(out_tile, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    linear_kernel[grid](x, weight, bias, out, m, n, k, x.stride(0), x.stride(1), weight.stride(0),
                        weight.stride(1), out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                        GROUP_M=8, EVEN=even, num_warps=warps, num_stages=stages)
    return out
