"""Reference solution for spatial/grid-sample (bilinear, zeros padding, align_corners=False).

The grid's coordinates are arbitrary, so in NCHW every tap of every channel is a gather of one element
from its own 32-byte sector: reading four taps per (pixel, channel) moves ~30x the useful bytes between
L2 and the SMs, and that traffic, not HBM, bounds the direct kernel (and PyTorch's). So the image is
first copied to channels-last order (N, H*W, C) in a scratch buffer by a tiled transpose (one read and
one write of x at the copy rate); the sampling kernel then reads each tap as C contiguous channels
(whole lines, 16-byte vectors), blends a (pixels, channels) tile with the per-pixel weights computed
once, and stores it back to NCHW, where the tile's pixels are contiguous. Programs run sample by sample,
so one sample's channels-last image (H*W*C elements, a few MB) stays in L2 while its pixels are drawn.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int]

# transpose: (channels per program, pixels per program, num_warps)
TRANSPOSE: Tiles = (64, 64, 4)
# sampling: (pixels per program, channels per step, num_warps)
SAMPLE: Tiles = (32, 64, 4)


@triton.jit
def channels_last_kernel(x_ptr, xt_ptr, C, HW, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    n = tl.program_id(2).to(tl.int64)
    mask = (c < C)[:, None] & (p < HW)[None, :]
    tile = tl.load(x_ptr + n * C * HW + c[:, None] * HW + p[None, :], mask=mask)
    tl.store(xt_ptr + n * HW * C + p[:, None] * C + c[None, :], tl.trans(tile), mask=tl.trans(mask))


@triton.jit
def grid_sample_kernel(xt_ptr, g_ptr, out_ptr, C, H, W, P, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    n = tl.program_id(1).to(tl.int64)
    valid = offs < P
    pair = tl.arange(0, 2)
    g = tl.load(g_ptr + (n * P + offs[:, None]) * 2 + pair[None, :], mask=valid[:, None], other=0.0)
    gx, gy = tl.split(g.to(tl.float32))
    ix = ((gx + 1.0) * W - 1.0) * 0.5
    iy = ((gy + 1.0) * H - 1.0) * 0.5
    fx0 = tl.floor(ix)
    fy0 = tl.floor(iy)
    wx1 = ix - fx0
    wy1 = iy - fy0
    x0 = fx0.to(tl.int32)
    y0 = fy0.to(tl.int32)
    okx0 = (x0 >= 0) & (x0 < W)
    okx1 = (x0 + 1 >= 0) & (x0 + 1 < W)
    oky0 = valid & (y0 >= 0) & (y0 < H)
    oky1 = valid & (y0 + 1 >= 0) & (y0 + 1 < H)
    w00 = ((1.0 - wy1) * (1.0 - wx1))[:, None]
    w01 = ((1.0 - wy1) * wx1)[:, None]
    w10 = (wy1 * (1.0 - wx1))[:, None]
    w11 = (wy1 * wx1)[:, None]
    m00 = (oky0 & okx0)[:, None]
    m01 = (oky0 & okx1)[:, None]
    m10 = (oky1 & okx0)[:, None]
    m11 = (oky1 & okx1)[:, None]
    # pixel index of tap (y0, x0) in the sample's channels-last image; the other taps are +1, +W, +W+1
    pix = (n * H * W + y0 * W + x0)[:, None] * C
    row = W * C
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        c_ok = (c < C)[None, :]
        at = xt_ptr + pix + c[None, :]
        v = tl.load(at, mask=m00 & c_ok, other=0.0).to(tl.float32) * w00
        v += tl.load(at + C, mask=m01 & c_ok, other=0.0).to(tl.float32) * w01
        v += tl.load(at + row, mask=m10 & c_ok, other=0.0).to(tl.float32) * w10
        v += tl.load(at + row + C, mask=m11 & c_ok, other=0.0).to(tl.float32) * w11
        dst = out_ptr + (n * C + c[None, :]) * P + offs[:, None]
        tl.store(dst, v.to(out_ptr.dtype.element_ty), mask=valid[:, None] & c_ok)


def grid_sample(x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.shape
    _, oh, ow, _ = grid.shape
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    xt = torch.empty((n, h * w, c), dtype=x.dtype, device=x.device)
    t_c, t_p, t_warps = TRANSPOSE
    t_c = min(triton.next_power_of_2(c), t_c)
    channels_last_kernel[(triton.cdiv(h * w, t_p), triton.cdiv(c, t_c), n)](x, xt, c, h * w, BLOCK_C=t_c,
                                                                            BLOCK_P=t_p, num_warps=t_warps)
    p = oh * ow
    s_p, s_c, s_warps = SAMPLE
    s_c = min(triton.next_power_of_2(c), s_c)
    s_p = min(s_p * SAMPLE[1] // s_c, triton.next_power_of_2(p))
    grid_sample_kernel[(triton.cdiv(p, s_p), n)](xt, grid, out, c, h, w, p, BLOCK_P=s_p, BLOCK_C=s_c,
                                                 num_warps=s_warps)
    return out
