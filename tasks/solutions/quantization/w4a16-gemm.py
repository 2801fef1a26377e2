"""Reference solution for quantization/w4a16-gemm: int4 weights dequantized tile by tile inside a GEMM.

The weight W (N, K) is never materialised: for each K tile a program loads the packed bytes of its
BLOCK_K x BLOCK_N slice of W^T (byte k // 2 of row n, shifted by 4 * (k % 2)), sign-extends the
nibbles, multiplies by the group scales in float32, rounds to the activation dtype and feeds
tl.dot with the matching tile of x. Few tokens (decode) use 16-row tiles over many programs; many
tokens use 128x128x64 tiles, 8 warps, 3 stages.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def w4a16_gemm_kernel(x_ptr, p_ptr, s_ptr, out_ptr, M, N, K, GROUP, stride_xm, stride_pn, stride_sn,
                      stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr):
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
    x_tile = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    p_cols = p_ptr + offs_n[None, :].to(tl.int64) * stride_pn
    s_cols = s_ptr + offs_n[None, :].to(tl.int64) * stride_sn
    shift = ((offs_k % 2) * 4)[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + offs_k
        k_mask = ks[:, None] < K
        x = tl.load(x_tile, mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        w_mask = k_mask & (offs_n[None, :] < N)
        byte = tl.load(p_cols + (ks // 2)[:, None], mask=w_mask, other=0)
        q = (((byte.to(tl.int32) >> shift) & 0xF) ^ 8) - 8
        scale = tl.load(s_cols + (ks // GROUP)[:, None], mask=w_mask, other=0.0)
        w = (q.to(tl.float32) * scale.to(tl.float32)).to(x.dtype)
        acc = tl.dot(x, w, acc)
        x_tile += BLOCK_K
    out = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def w4a16_gemm(x: torch.Tensor, packed: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    m, k = x.shape
    n = packed.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m <= 64:
        bm, bn, bk, warps, stages = max(16, triton.next_power_of_2(m)), 64, 128, 4, 3
    elif m * n >= 2048 * 2048:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 3
    else:
        bm, bn, bk, warps, stages = 64, 64, 64, 4, 3
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    w4a16_gemm_kernel[grid](x, packed, scale, out, m, n, k, group_size, x.stride(0), packed.stride(0),
                            scale.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                            num_warps=warps, num_stages=stages)
    return out
