"""Reference solution for convolution/conv-transpose2d: one implicit GEMM per output phase, gathered.

Output (oh, ow) receives tap (kh, kw) from input ((oh + p - kh) / s, (ow + p - kw) / s) when both
divisions are exact. Writing oh + p = qh * s + rh, only the taps kh = rh + jh * s reach it, from input
row qh - jh: the outputs of one phase (rh, rw) form an ordinary convolution with ceil(K / s)^2 taps. So
each program takes one phase and a tile of its outputs, and no MMA is spent on taps that do not land
(a gather over all K^2 taps wastes s^2 - 1 of every s^2). The GEMM rows are the phase's output pixels,
its columns output channels, its reduction the phase's taps times C_in in one flat loop. x is copied
to (N, H, W, C_in) (a tap's channels contiguous: 16-byte loads that pipeline) and the weight to
(K, K, C_in, C_out) (a B tile is rows of contiguous output channels). The s^2 phases of one tile are
adjacent in launch order, so the strided stores of one tile's outputs meet in L2.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int]
"""(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
TAPS_LARGE: Tiles = (256, 128, 64, 8, 3)
"""C_in a multiple of 16 and a large problem; scripts/triton_ref_sweep.py times the alternatives."""
FLAT_LARGE: Tiles = (128, 64, 32, 4, 3)
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
    src = src.contiguous()
    dst = torch.empty((b, s, r), dtype=src.dtype, device=src.device)
    grid = (triton.cdiv(r, 64), triton.cdiv(s, 64), b)
    transpose_kernel[grid](src, dst, r, s, BLOCK_R=64, BLOCK_S=64, num_warps=4)
    return dst


@triton.jit
def conv_t2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, CO, OH, OW, K, S, P, QH, QW, MQ,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    FLAT: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(0)
    phases = S * S
    phase = pid % phases
    tile = pid // phases
    tiles_n = tl.cdiv(CO, BLOCK_N)
    rh = phase // S
    rw = phase % S
    offs_m = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < CO
    img = offs_m // (QH * QW)
    qh = (offs_m % (QH * QW)) // QW
    qw = offs_m % QW
    oh = qh * S + rh - P
    ow = qw * S + rw - P
    m_ok = (offs_m < MQ) & (oh >= 0) & (oh < OH) & (ow >= 0) & (ow < OW)
    x_row = x_ptr + img.to(tl.int64) * H * W * C
    j = tl.cdiv(K, S)
    taps = j * j
    red = C * taps
    c_blocks = tl.cdiv(C, BLOCK_K)
    steps = tl.cdiv(red, BLOCK_K) if FLAT else taps * c_blocks
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for t in range(0, steps):
        if FLAT:
            k = t * BLOCK_K + tl.arange(0, BLOCK_K)
            c = k // taps
            jh = (k % taps) // j
            jw = (k % taps) % j
            kh = rh + jh * S
            kw = rw + jw * S
            k_ok = (k < red) & (kh < K) & (kw < K)
            ih = qh[:, None] - jh[None, :]
            iw = qw[:, None] - jw[None, :]
            a_ok = m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_ptrs = x_row[:, None] + (ih * W + iw) * C + c[None, :]
            w_rows = (kh * K + kw) * C + c
        else:
            tap = t // c_blocks
            jh = tap // j
            jw = tap % j
            kh = rh + jh * S
            kw = rw + jw * S
            k = (t % c_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < C * ((kh < K) & (kw < K)).to(tl.int32)
            ih = qh - jh
            iw = qw - jw
            pix_ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_ok = pix_ok[:, None] & k_ok[None, :]
            a_ptrs = (x_row + (ih * W + iw) * C)[:, None] + k[None, :]
            w_rows = (kh * K + kw) * C + k
        a = tl.load(a_ptrs, mask=a_ok, other=0.0)
        b = tl.load(w_ptr + w_rows[:, None] * CO + offs_n[None, :], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    plane = OH * OW
    # 32-bit channel offsets unless one image's output passes 2**31 elements: a 64-bit offset per
    # element would not fit in registers beside the accumulator.
    cols = offs_n.to(tl.int64) * plane if WIDE else offs_n * plane
    out = (out_ptr + (img.to(tl.int64) * CO * plane + oh * OW + ow))[:, None] + cols[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def _tiles(m: int, co: int, flat: bool) -> Tiles:
    if m * co < 4096 * 64:
        return SMALL
    bm, bn, bk, warps, stages = FLAT_LARGE if flat else TAPS_LARGE
    return bm, min(bn, max(32, triton.next_power_of_2(co))), bk, warps, stages


def conv_transpose2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
                     padding: int) -> torch.Tensor:
    n, c, h, w = x.shape
    _, co, k, _ = weight.shape
    oh = (h - 1) * stride - 2 * padding + k
    ow = (w - 1) * stride - 2 * padding + k
    x_nhwc = transposed(x, n, c, h * w)
    w_kkcn = transposed(weight, 1, c * co, k * k)
    out = torch.empty((n, co, oh, ow), dtype=x.dtype, device=x.device)
    qh, qw = triton.cdiv(oh + padding, stride), triton.cdiv(ow + padding, stride)
    mq = n * qh * qw
    flat = c % 16 != 0
    bm, bn, bk, warps, stages = _tiles(mq * stride * stride, co, flat)
    if not flat:
        bk = min(bk, c & -c)
    wide = (triton.cdiv(co, bn) * bn) * oh * ow >= 2**31
    grid = (triton.cdiv(mq, bm) * triton.cdiv(co, bn) * stride * stride,)
    conv_t2d_kernel[grid](x_nhwc, w_kkcn, bias, out, c, h, w, co, oh, ow, k, stride, padding, qh, qw, mq,
                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FLAT=flat, WIDE=wide,
                          num_warps=warps, num_stages=stages)
    return out
