"""Reference solution for convolution/conv-transpose1d: one implicit GEMM per output phase, gathered.

Output o receives tap k from input (o + padding - k) / stride when that division is exact. Writing
o + padding = q * stride + r, only the taps k = r + j * stride reach it, from input q - j: the outputs of
one phase r form an ordinary convolution with ceil(K / stride) taps. So each program takes one phase and
a tile of its outputs, and no MMA is spent on taps that do not land (a gather over all K taps wastes
stride - 1 of every stride). The GEMM rows are the phase's outputs, its columns output channels, its
reduction the phase's taps times C_in in one flat loop. x is copied to (N, L, C_in) (a position's
channels contiguous: 16-byte loads that pipeline) and the weight to (K, C_in, C_out) (a B tile is rows
of contiguous output channels). The phases of one tile are adjacent in launch order, so the strided
stores of one tile's outputs meet in L2.
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
def conv_t1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, L, CO, OL, K, S, P, Q, MQ,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    FLAT: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(0)
    r = pid % S
    tile = pid // S
    tiles_n = tl.cdiv(CO, BLOCK_N)
    offs_m = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < CO
    img = offs_m // Q
    q = offs_m % Q
    o = q * S + r - P
    m_ok = (offs_m < MQ) & (o >= 0) & (o < OL)
    x_row = x_ptr + img.to(tl.int64) * L * C
    taps = tl.cdiv(K, S)
    red = C * taps
    c_blocks = tl.cdiv(C, BLOCK_K)
    steps = tl.cdiv(red, BLOCK_K) if FLAT else taps * c_blocks
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for t in range(0, steps):
        if FLAT:
            k = t * BLOCK_K + tl.arange(0, BLOCK_K)
            c = k // taps
            j = k % taps
            tap = r + j * S
            k_ok = (k < red) & (tap < K)
            i = q[:, None] - j[None, :]
            a_ok = m_ok[:, None] & k_ok[None, :] & (i >= 0) & (i < L)
            a_ptrs = x_row[:, None] + i * C + c[None, :]
            w_rows = tap * C + c
        else:
            j = t // c_blocks
            tap = r + j * S
            k = (t % c_blocks) * BLOCK_K + tl.arange(0, BLOCK_K)
            k_ok = k < C * (tap < K).to(tl.int32)
            i = q - j
            a_ok = (m_ok & (i >= 0) & (i < L))[:, None] & k_ok[None, :]
            a_ptrs = (x_row + i * C)[:, None] + k[None, :]
            w_rows = tap * C + k
        a = tl.load(a_ptrs, mask=a_ok, other=0.0)
        b = tl.load(w_ptr + w_rows[:, None] * CO + offs_n[None, :], mask=k_ok[:, None] & n_ok[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    # 32-bit channel offsets unless one image's output passes 2**31 elements: a 64-bit offset per
    # element would not fit in registers beside the accumulator.
    cols = offs_n.to(tl.int64) * OL if WIDE else offs_n * OL
    out = (out_ptr + (img.to(tl.int64) * CO * OL + o))[:, None] + cols[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def _tiles(m: int, co: int, flat: bool) -> Tiles:
    if m * co < 4096 * 64:
        return SMALL
    bm, bn, bk, warps, stages = FLAT_LARGE if flat else TAPS_LARGE
    return bm, min(bn, max(32, triton.next_power_of_2(co))), bk, warps, stages


def conv_transpose1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
                     padding: int) -> torch.Tensor:
    n, c, length = x.shape
    _, co, k = weight.shape
    ol = (length - 1) * stride - 2 * padding + k
    x_nlc = transposed(x, n, c, length)
    w_kcn = transposed(weight, 1, c * co, k)
    out = torch.empty((n, co, ol), dtype=x.dtype, device=x.device)
    q = triton.cdiv(ol + padding, stride)
    mq = n * q
    flat = c % 16 != 0
    bm, bn, bk, warps, stages = _tiles(mq * stride, co, flat)
    if not flat:
        bk = min(bk, c & -c)
    wide = (triton.cdiv(co, bn) * bn) * ol >= 2**31
    grid = (triton.cdiv(mq, bm) * triton.cdiv(co, bn) * stride,)
    conv_t1d_kernel[grid](x_nlc, w_kcn, bias, out, c, length, co, ol, k, stride, padding, q, mq,
                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FLAT=flat, WIDE=wide,
                          num_warps=warps, num_stages=stages)
    return out
