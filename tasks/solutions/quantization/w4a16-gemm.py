"""Reference solution for quantization/w4a16-gemm: int4 weights dequantized tile by tile inside a GEMM.

The weight W (N, K) is never materialised. Each K step a program loads the packed codes of its
BLOCK_N x BLOCK_K slice of W as 32-bit words (a view of the uint8 tensor: eight codes per word,
contiguous along K, so 16-byte loads), splits the words into halves, bytes and nibbles with three
tl.join levels (the reshape to (BLOCK_N, BLOCK_K) then puts code 8w + i at column 8w + i), turns a
nibble v into a float without an integer-to-float conversion (the bits 0x4B000000 | (v ^ 8) are
2^23 + (v ^ 8); subtracting 2^23 + 8 leaves the signed code), multiplies by the group scales in float32
(BLOCK_K <= GROUP: one scale per row of the slice; BLOCK_K > GROUP: a (BLOCK_N, BLOCK_K // GROUP) tile
broadcast over its groups), rounds to the activation dtype and feeds tl.dot with the matching x tile.

The dequantization costs ~6 instructions per weight element per program, so it is amortised over a
tall M tile: many tokens use LARGE (256 x 128 x 64, 8 warps; wgmma with a 128-register accumulator),
where the tensor cores do 256 multiply-adds per dequantized weight. Few tokens (decode, M <= 64) are
a weight stream (28672 x 8192: 121 MB of codes and scales, 0.03 ms at 4.24 TB/s) and use SMALL: 16-row
tiles over many programs, so all SMs stream weights. The earlier version loaded one byte and one scale
per weight element and divided its K index by the (runtime) group size per element (1.9 ms and
4.9 ms at the bench shapes).
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); BLOCK_M of SMALL is a ceiling (16 to 64 by M)."""
LARGE: Tiles = (256, 128, 64, 8, 3)
"""M > 64 and M * N >= 2048^2."""
MEDIUM: Tiles = (64, 64, 64, 4, 3)
SMALL: Tiles = (64, 64, 128, 4, 4)
"""M <= 64 (decode)."""


@triton.jit
def w4a16_gemm_kernel(x_ptr, w_ptr, s_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_om,
                      GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
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
    n_ok = offs_n[:, None] < N
    x_tile = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    w_tile = w_ptr + offs_n[:, None].to(tl.int64) * stride_wn + tl.arange(0, BLOCK_K // 8)[None, :]
    s_rows = s_ptr + offs_n[:, None].to(tl.int64) * stride_sn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        # K is a multiple of GROUP (>= 32); a K tile past the end of a row reads zeros.
        k_ok = (k + 8 * tl.arange(0, BLOCK_K // 8))[None, :] < K
        words = tl.load(w_tile, mask=n_ok & k_ok, other=0)
        halves = tl.join(words, words >> 16)
        bytes_ = tl.join(halves, halves >> 8)
        nibbles = tl.reshape(tl.join(bytes_, bytes_ >> 4), (BLOCK_N, BLOCK_K))
        codes = ((nibbles & 0xF) ^ 0x4B000008).to(tl.float32, bitcast=True) - 8388616.0
        if BLOCK_K <= GROUP:
            scale = tl.load(s_rows + k // GROUP, mask=n_ok, other=0.0).to(tl.float32)
            w = codes * scale
        else:
            groups = k // GROUP + tl.arange(0, BLOCK_K // GROUP)
            scale = tl.load(s_rows + groups[None, :], mask=n_ok & (groups[None, :] < K // GROUP), other=0.0)
            scale = tl.broadcast_to(scale.to(tl.float32)[:, :, None], (BLOCK_N, BLOCK_K // GROUP, GROUP))
            w = codes * tl.reshape(scale, (BLOCK_N, BLOCK_K))
        acc = tl.dot(x, tl.trans(w.to(x.dtype)), acc)
        x_tile += BLOCK_K
        w_tile += BLOCK_K // 8
    out = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def w4a16_gemm(x: torch.Tensor, packed: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    m, k = x.shape
    n = packed.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    words = packed.view(torch.int32)  # group_size / 2 >= 16 bytes per group: rows are whole words
    if m <= 64:
        bm, bn, bk, warps, stages = SMALL
        bm = min(bm, max(16, triton.next_power_of_2(m)))
    elif m * n >= 2048 * 2048:
        bm, bn, bk, warps, stages = LARGE
    else:
        bm, bn, bk, warps, stages = MEDIUM
    bk = min(bk, max(32, triton.next_power_of_2(k)))
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    w4a16_gemm_kernel[grid](x, words, scale, out, m, n, k, x.stride(0), words.stride(0), scale.stride(0),
                            out.stride(0), GROUP=group_size, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                            num_warps=warps, num_stages=stages)
    return out
