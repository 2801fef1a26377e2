"""Reference solution for convolution/conv2d-3x3-stride2: an implicit GEMM on tensor cores over channels-last
data, each output pixel reading the input at twice its coordinates.

The GEMM rows are output pixels (N * OH * OW), its columns output channels, its reduction C_in * 9. Read in
place, NCHW x gives a tap's (pixels x channels) tile as a stride-2 gather along W: half of every sector is
wasted and no load is wider than 2 bytes, so the pipeliner cannot issue asynchronous copies. x is therefore
copied to (N, H, W, C_in) by a Triton transpose kernel of its own (one read and one write of x; at the bench
shapes x is 4x the output, so this copy is about a third of the total), after which a tap's channels are
one contiguous run of 16-byte loads; the weight is copied to (C_in * 9, C_out) so that a B tile is rows of
contiguous output channels. The reduction is one flat loop over (tap, channel block), so the pipeliner
overlaps loads and wgmma across taps. With C_in not a multiple of 16 (an RGB input) a step instead takes
BLOCK_K consecutive (channel, tap) pairs, so a small C_in is not padded to a tile per tap. Programs that
share an A tile (all column tiles of one row tile) are adjacent in launch order, so it is read once. The
NCHW store addresses a row of the tile by one 64-bit pointer and a channel by a 32-bit offset: a 64-bit
offset per element beside the 128x256 accumulator spilled the epilogue to local memory.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
"""A GEMM's (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); a copy kernel's blocks and num_warps."""
TAPS_LARGE: Tiles = (128, 256, 64, 8, 3)
"""C_in a multiple of 16 and a large problem (BLOCK_N shrinks to C_out); the sweep times the alternatives."""
FLAT_LARGE: Tiles = (128, 64, 32, 4, 3)
"""C_in not a multiple of 16 and a large problem."""
SMALL: Tiles = (64, 32, 32, 4, 2)
TRANSPOSE: Tiles = (64, 128, 4)
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
def conv2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, CO, OH, OW, M, stride, pad, KH: tl.constexpr,
                  KW: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  FLAT: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(CO, BLOCK_N)
    offs_m = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < M
    n_ok = offs_n < CO
    img = offs_m // (OH * OW)
    pix = offs_m % (OH * OW)
    ih0 = (pix // OW) * stride - pad
    iw0 = (pix % OW) * stride - pad
    x_row = x_ptr + img.to(tl.int64) * H * W * C
    taps: tl.constexpr = KH * KW
    red = C * taps
    c_blocks = tl.cdiv(C, BLOCK_K)
    steps = tl.cdiv(red, BLOCK_K) if FLAT else taps * c_blocks
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for t in range(0, steps):
        if FLAT:
            k = t * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < red
            c = k // taps
            dh = (k % taps) // KW
            dw = (k % taps) % KW
            ih = ih0[:, None] + dh[None, :]
            iw = iw0[:, None] + dw[None, :]
            a_ok = (m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
            a_ptrs = x_row[:, None] + (ih * W + iw) * C + c[None, :]
            w_rows = k
        else:
            tap = t // c_blocks
            k = (t % c_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < C
            ih = ih0 + tap // KW
            iw = iw0 + tap % KW
            pix_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_ok = pix_ok[:, None] & k_ok[None, :]
            a_ptrs = (x_row + (ih * W + iw) * C)[:, None] + k[None, :]
            w_rows = k * taps + tap
        a = tl.load(a_ptrs, mask=a_ok, other=0.0)
        b = tl.load(w_ptr + w_rows[:, None] * CO + offs_n[None, :], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    plane = OH * OW
    # 32-bit channel offsets unless one image's output passes 2**31 elements: a 64-bit offset per
    # element would not fit in registers beside the accumulator.
    cols = offs_n.to(tl.int64) * plane if WIDE else offs_n * plane
    out = (out_ptr + (img.to(tl.int64) * CO * plane + pix))[:, None] + cols[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def _tiles(m: int, co: int, flat: bool) -> Tiles:
    if m * co < 4096 * 64:
        return SMALL
    bm, bn, bk, warps, stages = FLAT_LARGE if flat else TAPS_LARGE
    return bm, min(bn, max(32, triton.next_power_of_2(co))), bk, warps, stages


def _conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
            padding: int) -> torch.Tensor:
    n, c, h, w = x.shape
    co, _, kh, kw = weight.shape
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (w + 2 * padding - kw) // stride + 1
    x_nhwc = transposed(x, n, c, h * w)
    w_kn = transposed(weight, 1, co, c * kh * kw)
    out = torch.empty((n, co, oh, ow), dtype=x.dtype, device=x.device)
    m = n * oh * ow
    flat = c % 16 != 0
    bm, bn, bk, warps, stages = _tiles(m, co, flat)
    if not flat:
        bk = min(bk, c & -c)
    wide = (triton.cdiv(co, bn) * bn) * oh * ow >= 2**31
    grid = (triton.cdiv(m, bm) * triton.cdiv(co, bn),)
    conv2d_kernel[grid](x_nhwc, w_kn, bias, out, c, h, w, co, oh, ow, m, stride, padding, KH=kh, KW=kw,
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FLAT=flat, WIDE=wide,
                        num_warps=warps, num_stages=stages)
    return out


def conv2d_3x3_stride2(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return _conv2d(x, weight, bias, 2, 1)
