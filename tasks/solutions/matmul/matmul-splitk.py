"""Reference solution for matmul/matmul-splitk: split-K GEMM with a deterministic fp32 reduction.

A small M x N output has too few tiles to fill the GPU, so the K range is cut into SPLIT slices,
one per program along the grid's second axis. Each program writes its fp32 partial tile to a
(SPLIT, M, N) workspace; a second kernel sums the slices in a fixed order and rounds once to the
output dtype (deterministic, unlike atomics). Tiles are 128x128x64 with 8 warps at bench sizes
(wgmma on sm_90a); SPLIT aims at about two programs per SM, with slices of at least 512.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def splitk_partial_kernel(a_ptr, b_ptr, ws_ptr, M, N, K, k_per_split, stride_am, stride_ak, stride_bk,
                          stride_bn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    k_begin = split * k_per_split
    k_end = min(k_begin + k_per_split, K)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None] * stride_am + (k_begin + offs_k[None, :]).to(tl.int64) * stride_ak
    b_tile = b_ptr + (k_begin + offs_k[:, None]).to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_begin, k_end, BLOCK_K):
        k_left = k_end - k
        a = tl.load(a_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    ws_tile = ws_ptr + split.to(tl.int64) * M * N + offs_m[:, None] * N + offs_n[None, :]
    tl.store(ws_tile, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def splitk_reduce_kernel(ws_ptr, c_ptr, MN, SPLIT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLIT):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def matmul_splitk(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if m * n >= 256 * 256:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 3
    else:
        bm, bn, bk, warps, stages = 64, 64, 64, 4, 3
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    # About two programs per SM (132 on an H200), but no slice shorter than 512 along K.
    split = max(1, min(triton.cdiv(k, 512), 264 // tiles))
    k_per_split = triton.cdiv(triton.cdiv(k, split), bk) * bk
    split = triton.cdiv(k, k_per_split)
    ws = torch.empty((split, m, n), dtype=torch.float32, device=a.device)
    splitk_partial_kernel[(tiles, split)](a, b, ws, m, n, k, k_per_split, a.stride(0), a.stride(1),
                                          b.stride(0), b.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                          num_warps=warps, num_stages=stages)
    block = 1024
    splitk_reduce_kernel[(triton.cdiv(m * n, block),)](ws, c, m * n, split, BLOCK=block, num_warps=4)
    return c
