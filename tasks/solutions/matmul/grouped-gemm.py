"""Reference solution for matmul/grouped-gemm: one launch over every group's tiles.

Row tiles are numbered group by group (group g has cdiv(m_g, BLOCK_M) of them, so the total is at
most cdiv(T, BLOCK_M) + G). Each program scans the G cumulative ends on the device to find which
group and which tile of it is its own, then runs a plain tiled GEMM against b[g]; spare programs
(and empty groups) do nothing. Nothing is read back to the host, so the launch never waits for
the GPU. Bench-size tiles are 128x256x64, 8 warps, 3 stages (wgmma on sm_90a).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def grouped_gemm_kernel(a_ptr, b_ptr, c_ptr, offs_ptr, G, N, K, stride_am, stride_ak, stride_bg, stride_bk,
                        stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    pid_n = tl.program_id(1)
    start = 0
    tiles_before = 0
    row0 = 0
    row_end = 0
    group = 0
    for g in range(0, G):
        end = tl.load(offs_ptr + g)
        tiles_g = tl.cdiv(end - start, BLOCK_M)
        hit = (tile >= tiles_before) & (tile < tiles_before + tiles_g)
        row0 = tl.where(hit, start + (tile - tiles_before) * BLOCK_M, row0)
        row_end = tl.where(hit, end, row_end)
        group = tl.where(hit, g, group)
        tiles_before += tiles_g
        start = end
    k_stop = tl.where(row0 < row_end, K, 0)

    offs_m = row0 + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_tile = (b_ptr + group.to(tl.int64) * stride_bg + offs_k[:, None] * stride_bk
              + offs_n[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, k_stop, BLOCK_K):
        k_left = K - k
        a = tl.load(a_tile, mask=(offs_m[:, None] < row_end) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c_tile = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < row_end) & (offs_n[None, :] < N))


def grouped_gemm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    t, k = a.shape
    g, _, n = b.shape
    c = torch.empty((t, n), dtype=a.dtype, device=a.device)
    if t * n >= 2048 * 2048:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    else:
        bm, bn, bk, warps, stages = 64, 64, 32, 4, 3
    grid = (triton.cdiv(t, bm) + g, triton.cdiv(n, bn))
    grouped_gemm_kernel[grid](a, b, c, offs, g, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              b.stride(2), c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                              num_warps=warps, num_stages=stages)
    return c
