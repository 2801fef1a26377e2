"""Reference solution for matmul/matmul-splitk: split-K GEMM with a deterministic fp32 reduction.

A small M x N output has too few tiles to fill the GPU, so the K range is cut into SPLIT slices,
one per program along the grid's second axis. Each program writes its fp32 partial tile to a
(SPLIT, M, N) workspace; a second kernel sums the slices in a fixed order and rounds once to the
output dtype (deterministic, unlike atomics). Bench sizes use matmul/matmul's 128x256x64 tiles with 8
warps and 4 stages (wgmma on sm_90a, one program per SM), and SPLIT fills the 132 SMs in one wave: at
512x512 that is 8 tiles x 16 slices = 128 programs, each a 16384-long K slice, so the partial GEMM runs at
the large-GEMM rate and the workspace (16 x M x N float32) costs a few microseconds to sum. When the tiles
divide M, N and K (EVEN) the loads carry no masks (plain 16-byte cp.async); tl.assume tells the compiler
that every slice is non-empty, which keeps ptxas from serialising the wgmma pipeline.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
LARGE: Tiles = (128, 256, 64, 8, 4)
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for M * N >= 256 * 512: matmul/matmul's bench tiles
(192 KB of shared memory, one program per SM)."""
SMALL: Tiles = (64, 64, 64, 4, 3)
PROGRAMS: Tiles = (132,)
"""Programs to aim for: one per SM of an H100/H200 with LARGE tiles, so the split GEMM runs in one wave."""


@triton.jit
def splitk_partial_kernel(a_ptr, b_ptr, ws_ptr, M, N, K, k_per_split, stride_am, stride_ak, stride_bk,
                          stride_bn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          EVEN: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    k_begin = split * k_per_split
    k_end = min(k_begin + k_per_split, K)
    tl.assume(k_end > k_begin)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None] * stride_am + (k_begin + offs_k[None, :]).to(tl.int64) * stride_ak
    b_tile = b_ptr + (k_begin + offs_k[:, None]).to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_begin, k_end, BLOCK_K):
        if EVEN:
            a = tl.load(a_tile)
            b = tl.load(b_tile)
        else:
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
    bm, bn, bk, warps, stages = LARGE if m * n >= 256 * 512 else SMALL
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    # PROGRAMS[0] programs in all (a whole number of splits per tile), but no slice shorter than 512 along K.
    split = max(1, min(triton.cdiv(k, 512), PROGRAMS[0] // tiles))
    k_per_split = triton.cdiv(triton.cdiv(k, split), bk) * bk
    split = triton.cdiv(k, k_per_split)
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    ws = torch.empty((split, m, n), dtype=torch.float32, device=a.device)
    splitk_partial_kernel[(tiles, split)](a, b, ws, m, n, k, k_per_split, a.stride(0), a.stride(1),
                                          b.stride(0), b.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                          EVEN=even, num_warps=warps, num_stages=stages)
    block = 1024
    splitk_reduce_kernel[(triton.cdiv(m * n, block),)](ws, c, m * n, split, BLOCK=block, num_warps=4)
    return c
