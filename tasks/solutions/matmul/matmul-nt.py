"""Reference solution for matmul/matmul-nt: C = A @ B^T with B read in place through its strides.

B is (N, K) row-major, so a (BLOCK_K, BLOCK_N) tile of B^T is a strided view of B: K-contiguous
tiles, the layout wgmma prefers for its B operand. Tiles grow with the problem (LARGE at bench sizes,
which lowers tl.dot to wgmma on sm_90a); programs run in groups of GROUP_M tile rows so neighbours share
tiles of B in L2. When the tiles divide M, N and K (EVEN) the loads carry no masks, so the pipeliner
issues plain 16-byte asynchronous copies (what took matmul/matmul from 0.87x to 0.96x of cuBLAS).
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
def matmul_nt_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bn, stride_bk,
                     stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr):
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
    a_tile = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_tile = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
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
    c_tile = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_nt_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                           c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                           EVEN=even, num_warps=warps, num_stages=stages)
    return c
