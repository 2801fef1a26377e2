"""Reference solution for convolution/dilated-conv2d: the implicit GEMM of convolution/conv2d with taps
`dilation` pixels apart and padding = dilation.

The GEMM rows are output pixels, its columns output channels, its reduction C_in * 9. x is copied to
(N, H, W, C_in) so that a tap's channels are one contiguous run (16-byte loads that pipeline), and the
weight to (C_in * 9, C_out) so that a B tile is rows of contiguous output channels. The reduction is one
flat loop, so the pipeliner overlaps loads and MMAs across taps. With C_in a multiple of 16 each step is
one tap and BLOCK_K channels; otherwise a step takes BLOCK_K consecutive (channel, tap) pairs. Programs
that share an A tile are adjacent in launch order, so it is read from memory once.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
TAPS_LARGE: Tiles = (128, 256, 64, 8, 3)
"""C_in a multiple of 16 and a large problem; scripts/triton_ref_sweep.py times the alternatives."""
FLAT_LARGE: Tiles = (128, 64, 32, 4, 3)
"""C_in not a multiple of 16 and a large problem."""
SMALL: Tiles = (64, 32, 32, 4, 2)


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
    grid = (triton.cdiv(r, 64), triton.cdiv(s, 64), b)
    transpose_kernel[grid](src, dst, r, s, BLOCK_R=64, BLOCK_S=64, num_warps=4)
    return dst


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, CO, OH, OW, M, KH, KW, stride, pad, dil,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, FLAT: tl.constexpr):
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
    taps = KH * KW
    red = C * taps
    c_blocks = tl.cdiv(C, BLOCK_K)
    steps = tl.cdiv(red, BLOCK_K) if FLAT else taps * c_blocks
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for t in range(0, steps):
        if FLAT:
            k = t * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < red
            c = k // taps
            dh = (k % taps) // KW * dil
            dw = (k % taps) % KW * dil
            ih = ih0[:, None] + dh[None, :]
            iw = iw0[:, None] + dw[None, :]
            a_ok = (m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
            a_ptrs = x_row[:, None] + (ih * W + iw) * C + c[None, :]
            w_rows = k
        else:
            tap = t // c_blocks
            k = (t % c_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < C
            ih = ih0 + (tap // KW) * dil
            iw = iw0 + (tap % KW) * dil
            pix_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_ok = pix_ok[:, None] & k_ok[None, :]
            a_ptrs = (x_row + (ih * W + iw) * C)[:, None] + k[None, :]
            w_rows = k * taps + tap
        a = tl.load(a_ptrs, mask=a_ok, other=0.0)
        b = tl.load(w_ptr + w_rows[:, None] * CO + offs_n[None, :], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    out = out_ptr + (img[:, None].to(tl.int64) * CO + offs_n[None, :]) * OH * OW + pix[:, None]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def _tiles(m: int, co: int, flat: bool) -> Tiles:
    if m * co < 4096 * 64:
        return SMALL
    bm, bn, bk, warps, stages = FLAT_LARGE if flat else TAPS_LARGE
    return bm, min(bn, max(32, triton.next_power_of_2(co))), bk, warps, stages


def _conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, padding: int,
            dilation: int) -> torch.Tensor:
    n, c, h, w = x.shape
    co, _, kh, kw = weight.shape
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    x_nhwc = transposed(x, n, c, h * w)
    w_kn = transposed(weight, 1, co, c * kh * kw)
    out = torch.empty((n, co, oh, ow), dtype=x.dtype, device=x.device)
    m = n * oh * ow
    flat = c % 16 != 0
    bm, bn, bk, warps, stages = _tiles(m, co, flat)
    if not flat:
        bk = min(bk, c & -c)
    grid = (triton.cdiv(m, bm) * triton.cdiv(co, bn),)
    conv2d_kernel[grid](x_nhwc, w_kn, bias, out, c, h, w, co, oh, ow, m, kh, kw, stride, padding, dilation,
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FLAT=flat, num_warps=warps, num_stages=stages)
    return out


def dilated_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, dilation: int) -> torch.Tensor:
    return _conv2d(x, weight, bias, 1, dilation, dilation)
