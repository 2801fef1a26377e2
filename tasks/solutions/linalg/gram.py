"""Reference solution for linalg/gram: X^T X as a split-K GEMM over the long dimension.

G has only (N / BLOCK)^2 tiles, so the M rows are cut into SPLIT slices along the grid's second
axis; each program multiplies its slice's tile columns of X (tl.dot of X^T and X blocks, both read
in place) into a float32 tile written to a (SPLIT, N, N) workspace, and a second kernel adds the
slices in a fixed order (deterministic). float32 inputs use input_precision="ieee"; 16-bit inputs
use tensor cores (128x128x64 tiles at bench sizes: wgmma on sm_90a).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def gram_partial_kernel(x_ptr, ws_ptr, M, N, rows_per_split, stride_xm, stride_xn, IEEE: tl.constexpr,
                        BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tiles = tl.cdiv(N, BLOCK)
    ti = pid // tiles
    tj = pid % tiles
    row_begin = split * rows_per_split
    row_end = min(row_begin + rows_per_split, M)

    offs_i = ti * BLOCK + tl.arange(0, BLOCK)
    offs_j = tj * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    xt_tile = x_ptr + (row_begin + offs_k[None, :]).to(tl.int64) * stride_xm + offs_i[:, None] * stride_xn
    x_tile = x_ptr + (row_begin + offs_k[:, None]).to(tl.int64) * stride_xm + offs_j[None, :] * stride_xn
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for r in range(row_begin, row_end, BLOCK_K):
        r_left = row_end - r
        xt = tl.load(xt_tile, mask=(offs_i[:, None] < N) & (offs_k[None, :] < r_left), other=0.0)
        x = tl.load(x_tile, mask=(offs_k[:, None] < r_left) & (offs_j[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(xt, x, acc, input_precision="ieee")
        else:
            acc = tl.dot(xt, x, acc)
        xt_tile += BLOCK_K * stride_xm
        x_tile += BLOCK_K * stride_xm
    ws = ws_ptr + split.to(tl.int64) * N * N + offs_i[:, None] * N + offs_j[None, :]
    tl.store(ws, acc, mask=(offs_i[:, None] < N) & (offs_j[None, :] < N))


@triton.jit
def gram_reduce_kernel(ws_ptr, g_ptr, NN, SPLIT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLIT):
        acc += tl.load(ws_ptr + s * NN + offs, mask=offs < NN, other=0.0)
    tl.store(g_ptr + offs, acc, mask=offs < NN)


def gram(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    g = torch.empty((n, n), dtype=torch.float32, device=x.device)
    ieee = x.dtype == torch.float32
    if n >= 128 and m >= 65536:
        block, block_k, warps, stages = 128, (32 if ieee else 64), 8, 3
    else:
        block, block_k, warps, stages = max(16, min(64, triton.next_power_of_2(n))), 64, 4, 2
    tiles = triton.cdiv(n, block) ** 2
    # About two programs per SM (132 on an H200), but no slice shorter than 2048 rows.
    split = max(1, min(triton.cdiv(m, 2048), 264 // tiles))
    rows_per_split = triton.cdiv(triton.cdiv(m, split), block_k) * block_k
    split = triton.cdiv(m, rows_per_split)
    ws = torch.empty((split, n, n), dtype=torch.float32, device=x.device)
    gram_partial_kernel[(tiles, split)](x, ws, m, n, rows_per_split, x.stride(0), x.stride(1), IEEE=ieee,
                                        BLOCK=block, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
    gram_reduce_kernel[(triton.cdiv(n * n, 1024),)](ws, g, n * n, split, BLOCK=1024, num_warps=4)
    return g
