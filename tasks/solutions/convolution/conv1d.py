"""Reference solution for convolution/conv1d: an implicit GEMM on tensor cores over channels-last data.

The GEMM rows are output positions (N * OL), its columns output channels, its reduction C_in * K. Read in
place, (N, C_in, L) x gives a tap's (positions x channels) tile with the positions contiguous but shifted by
the tap (and strided by the stride), so no load is 16-byte aligned and the pipeliner cannot issue
asynchronous copies. x is therefore copied to (N, L, C_in) by a Triton transpose kernel of its own (one
read and one write of x), after which a tap's channels are one contiguous run of 16-byte loads; the weight
is copied to (C_in * K, C_out) so that a B tile is rows of contiguous output channels. The reduction is one
flat loop over (tap, channel block), so the pipeliner overlaps loads and wgmma across taps. With C_in not a
multiple of 16 a step instead takes BLOCK_K consecutive (channel, tap) pairs, so a small C_in is not padded
to a tile per tap. Programs that share an A tile (all column tiles of one row tile) are adjacent in launch
order, so it is read from memory once.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
"""A GEMM's (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); a copy kernel's blocks and num_warps."""
TAPS_LARGE: Tiles = (128, 256, 64, 8, 4)
"""C_in a multiple of 16 and a large problem (BLOCK_N shrinks to C_out); the sweep times the alternatives."""
FLAT_LARGE: Tiles = (128, 64, 32, 4, 3)
"""C_in not a multiple of 16 and a large problem."""
SMALL: Tiles = (64, 32, 32, 4, 2)
TRANSPOSE: Tiles = (64, 64, 4)
"""(BLOCK_R, BLOCK_S, num_warps) of the channels-last repacking."""


@triton.jit
def transpose_kernel(src_ptr, dst_ptr, R, S, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    """dst[b, s, r] = src[b, r, s]: a tile read along s and written along r (Triton stages it through
    shared memory), so both sides are coalesced."""
    base = tl.program_id(2).to(tl.int64) * R * S
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = (r[:, None] < R) & (s[None, :] < S)
    tile = tl.load(src_ptr + base + r[:, None].to(tl.int64) * S + s[None, :], mask=mask)
    tl.store(dst_ptr + base + s[None, :].to(tl.int64) * R + r[:, None], tile, mask=mask)


def transposed(src: torch.Tensor, b: int, r: int, s: int) -> torch.Tensor:
    """The contiguous ``src`` read as (b, r, s), returned as a new contiguous (b, s, r): the repacking is a
    kernel of ours (a PyTorch copy would be a library kernel computing inside the entrypoint)."""
    dst = torch.empty((b, s, r), dtype=src.dtype, device=src.device)
    block_r, block_s, warps = TRANSPOSE
    grid = (triton.cdiv(r, block_r), triton.cdiv(s, block_s), b)
    transpose_kernel[grid](src, dst, r, s, BLOCK_R=block_r, BLOCK_S=block_s, num_warps=warps)
    return dst


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, L, CO, OL, M, stride, pad, K: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, FLAT: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(CO, BLOCK_N)
    offs_m = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < M
    n_ok = offs_n < CO
    img = offs_m // OL
    o = offs_m % OL
    pos0 = o * stride - pad
    x_row = x_ptr + img.to(tl.int64) * L * C
    red = C * K
    c_blocks = tl.cdiv(C, BLOCK_K)
    steps = tl.cdiv(red, BLOCK_K) if FLAT else K * c_blocks
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for t in range(0, steps):
        if FLAT:
            k = t * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < red
            pos = pos0[:, None] + (k % K)[None, :]
            a_ok = m_ok[:, None] & k_ok[None, :] & (pos >= 0) & (pos < L)
            a_ptrs = x_row[:, None] + pos * C + (k // K)[None, :]
            w_rows = k
        else:
            tap = t // c_blocks
            k = (t % c_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < C
            pos = pos0 + tap
            pos_ok = m_ok & (pos >= 0) & (pos < L)
            a_ok = pos_ok[:, None] & k_ok[None, :]
            a_ptrs = (x_row + pos * C)[:, None] + k[None, :]
            w_rows = k * K + tap
        a = tl.load(a_ptrs, mask=a_ok, other=0.0)
        b = tl.load(w_ptr + w_rows[:, None] * CO + offs_n[None, :], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    out = out_ptr + (img[:, None].to(tl.int64) * CO + offs_n[None, :]) * OL + o[:, None]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def _tiles(m: int, co: int, flat: bool) -> Tiles:
    if m * co < 4096 * 64:
        return SMALL
    bm, bn, bk, warps, stages = FLAT_LARGE if flat else TAPS_LARGE
    return bm, min(bn, max(32, triton.next_power_of_2(co))), bk, warps, stages


def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
           padding: int) -> torch.Tensor:
    n, c, length = x.shape
    co, _, k = weight.shape
    ol = (length + 2 * padding - k) // stride + 1
    x_nlc = transposed(x, n, c, length)
    w_kn = transposed(weight, 1, co, c * k)
    out = torch.empty((n, co, ol), dtype=x.dtype, device=x.device)
    m = n * ol
    flat = c % 16 != 0
    bm, bn, bk, warps, stages = _tiles(m, co, flat)
    if not flat:
        bk = min(bk, c & -c)
    grid = (triton.cdiv(m, bm) * triton.cdiv(co, bn),)
    conv1d_kernel[grid](x_nlc, w_kn, bias, out, c, length, co, ol, m, stride, padding, K=k, BLOCK_M=bm,
                        BLOCK_N=bn, BLOCK_K=bk, FLAT=flat, num_warps=warps, num_stages=stages)
    return out
