"""Reference solution for quantization/fp8-gemm: an fp8 e4m3 tensor-core GEMM with row-wise scales.

Both operands are K-contiguous (b is (N, K), read in place as tiles of b^T), the layout fp8 wgmma
requires on sm_90a. Hopper's fp8 MMA accumulates with reduced precision, so each BLOCK_K = 128 slice
of K goes into a fresh accumulator that is then added to the float32 one (acc += tl.dot(a, b)), as
cuBLAS does without fast accumulation. The epilogue multiplies by the row scales of a and b and rounds
once. When the tiles divide M, N and K (EVEN, both bench shapes) the loads carry no masks.

The promotion keeps two accumulators live, so the tile is sized for the register file: LARGE is
128 x 128 x 128 with 8 warps (two warpgroups of 64 x 128; 64 + 64 accumulator registers per thread,
~170 in all). The earlier 128 x 256 tile needed 128 + 128 and spilled (255 registers, ~250 bytes of
spill per thread), which with the serialised promotion left it at ~0.3x of cuBLASLt. Each warpgroup
waits for its own MMAs before adding them, so the other warpgroup's MMAs keep the tensor cores busy.
PROMOTE_IN_DOT = (1,) lets Triton do the promotion inside the dot instead
(tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K): one partial accumulator per 64-row MMA slice), which
fits 256 x 128 tiles or two 128 x 128 programs of 4 warps per SM in registers; both are sweep options.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
LARGE: Tiles = (256, 128, 128, 8, 4)
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for M * N >= 2048^2; BLOCK_K <= 128."""
SMALL: Tiles = (64, 64, 128, 4, 3)
PROMOTE_IN_DOT: Tiles = (1,)
"""(1,): promotion by tl.dot's max_num_imprecise_acc; (0,): acc += tl.dot(a, b)."""


@triton.jit
def fp8_gemm_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN: tl.constexpr, IN_DOT: tl.constexpr):
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
    a_tile = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :]
    b_tile = b_ptr + offs_k[:, None] + offs_n[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN:
            a = tl.load(a_tile)
            b = tl.load(b_tile)
        else:
            k_left = K - k
            a = tl.load(a_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        if IN_DOT:
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
        else:
            acc += tl.dot(a, b)
        a_tile += BLOCK_K
        b_tile += BLOCK_K
    sa = tl.load(sa_ptr + offs_m, mask=offs_m < M, other=0.0)
    sb = tl.load(sb_ptr + offs_n, mask=offs_n < N, other=0.0)
    out = acc * sa[:, None] * sb[None, :]
    c_tile = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    tl.store(c_tile, out.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def fp8_gemm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
             out_dtype: torch.dtype) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=out_dtype, device=a.device)
    bm, bn, bk, warps, stages = LARGE if m * n >= 2048 * 2048 else SMALL
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    fp8_gemm_kernel[grid](a, b, scale_a, scale_b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, EVEN=even,
                          IN_DOT=bool(PROMOTE_IN_DOT[0]), num_warps=warps, num_stages=stages)
    return c
