"""Reference solution for linalg/bmm-broadcast: a batched GEMM whose B operand is shared per batch.

The grid's second axis enumerates the B*H products; program (t, i*H + h) reads a[i, h] and b[i, 0]
through their strides, so b is never expanded and the H programs of a batch entry share its tiles
in L2. Bench-size tiles are LARGE (or MEDIUM for narrower outputs): wgmma on sm_90a. When the tiles
divide M, N and K (EVEN) the loads carry no masks, so the pipeliner issues plain 16-byte asynchronous
copies.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
LARGE: Tiles = (128, 256, 64, 8, 3)
"""M * N >= 2048^2 (scripts/triton_ref_sweep.py times the alternatives)."""
MEDIUM: Tiles = (128, 128, 64, 8, 3)
"""M * N >= 512^2."""
SMALL: Tiles = (64, 64, 32, 4, 3)


@triton.jit
def bmm_broadcast_kernel(a_ptr, b_ptr, c_ptr, H, M, N, K, stride_ab, stride_ah, stride_am, stride_ak,
                         stride_bb, stride_bk, stride_bn, stride_cb, stride_ch, stride_cm, stride_cn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    batch = (bh // H).to(tl.int64)
    head = (bh % H).to(tl.int64)
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
    a_tile = (a_ptr + batch * stride_ab + head * stride_ah + offs_m[:, None] * stride_am
              + offs_k[None, :] * stride_ak)
    b_tile = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            a = tl.load(a_tile)
            b = tl.load(b_tile)
        else:
            k_left = K - k
            a = tl.load(a_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c_tile = (c_ptr + batch * stride_cb + head * stride_ch + offs_m[:, None] * stride_cm
              + offs_n[None, :] * stride_cn)
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def bmm_broadcast(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    nb, h, m, k = a.shape
    n = b.shape[3]
    c = torch.empty((nb, h, m, n), dtype=a.dtype, device=a.device)
    tiles = LARGE if m * n >= 2048 * 2048 else MEDIUM if m * n >= 512 * 512 else SMALL
    bm, bn, bk, warps, stages = tiles
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), nb * h)
    bmm_broadcast_kernel[grid](a, b, c, h, m, n, k, a.stride(0), a.stride(1), a.stride(2), a.stride(3),
                               b.stride(0), b.stride(2), b.stride(3), c.stride(0), c.stride(1), c.stride(2),
                               c.stride(3), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, EVEN=even,
                               num_warps=warps, num_stages=stages)
    return c
