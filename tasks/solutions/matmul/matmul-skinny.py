"""Reference solution for matmul/matmul-skinny: a split-K weight-streaming GEMM computed as out^T = W @ x^T.

With M <= 64 the (N, K) weight is nearly all the traffic, so the kernel is a stream over W. Computing the
transposed product puts the large N in the MMA's row slot (wgmma m64) and the few rows of x in its column
slot (n16..n64), so no tensor-core work is padded to 64 rows, and both operands are K-contiguous, the
layout wgmma reads natively. Each program streams a BLOCK_N x K_SLICE slab of W through a deep cp.async
pipeline; the K range is split so that there are several programs per SM (a whole number of W slabs per SM
would otherwise leave a tail wave of idle bandwidth). With one slice the program rounds and stores its tile
directly; otherwise float32 partial tiles go to a (SPLIT, M, N) workspace that a second kernel sums in a
fixed order (deterministic) before the single rounding.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
STREAM: Tiles = (64, 128, 4, 4)
"""(BLOCK_N, BLOCK_K, num_warps, num_stages): 4 stages of a 64x128 W tile plus the x tile (~96 KB) let
two programs share an SM, with ~190 KB of loads in flight per SM."""
PROGRAMS: Tiles = (528,)
"""Aim for about this many programs (8 per SM of an H200) when choosing the K split."""


@triton.jit
def skinny_kernel(x_ptr, w_ptr, out_ptr, ws_ptr, M, N, K, k_per_split, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN: tl.constexpr, DIRECT: tl.constexpr):
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    k_begin = split * k_per_split
    k_end = min(k_begin + k_per_split, K)
    tl.assume(k_end > k_begin)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    w_tile = w_ptr + offs_n[:, None].to(tl.int64) * K + (k_begin + offs_k[None, :])
    xt_tile = x_ptr + offs_m[None, :] * K + (k_begin + offs_k[:, None])
    row_ok = offs_m[None, :] < M
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for k in range(k_begin, k_end, BLOCK_K):
        if EVEN:
            w = tl.load(w_tile)
            xt = tl.load(xt_tile, mask=row_ok, other=0.0)
        else:
            k_ok = offs_k < k_end - k
            w = tl.load(w_tile, mask=(offs_n[:, None] < N) & k_ok[None, :], other=0.0)
            xt = tl.load(xt_tile, mask=row_ok & k_ok[:, None], other=0.0)
        acc = tl.dot(w, xt, acc)
        w_tile += BLOCK_K
        xt_tile += BLOCK_K
    mask = (offs_n[:, None] < N) & row_ok
    if DIRECT:
        tl.store(out_ptr + offs_m[None, :] * N + offs_n[:, None], acc.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        ws_tile = ws_ptr + split.to(tl.int64) * M * N + offs_m[None, :] * N + offs_n[:, None]
        tl.store(ws_tile, acc, mask=mask)


@triton.jit
def split_sum_kernel(ws_ptr, out_ptr, MN, SPLIT, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLIT):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def matmul_skinny(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_n, block_k, warps, stages = STREAM
    block_m = max(16, triton.next_power_of_2(m))
    tiles_n = triton.cdiv(n, block_n)
    split = max(1, min(triton.cdiv(PROGRAMS[0], tiles_n), k // (4 * block_k)))
    k_per_split = triton.cdiv(triton.cdiv(k, split), block_k) * block_k
    split = triton.cdiv(k, k_per_split)
    even = n % block_n == 0 and k % block_k == 0
    ws = out if split == 1 else torch.empty((split, m, n), dtype=torch.float32, device=x.device)
    skinny_kernel[(tiles_n, split)](x, weight, out, ws, m, n, k, k_per_split, BLOCK_M=block_m,
                                    BLOCK_N=block_n, BLOCK_K=block_k, EVEN=even, DIRECT=split == 1,
                                    num_warps=warps, num_stages=stages)
    if split > 1:
        split_sum_kernel[(triton.cdiv(m * n, 1024),)](ws, out, m * n, split, BLOCK=1024, num_warps=4)
    return out
