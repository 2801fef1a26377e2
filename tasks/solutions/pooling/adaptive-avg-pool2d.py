"""Reference solution for pooling/adaptive-avg-pool2d: a program owns one output row of BLOCK_P planes.

Output row oh averages input rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) and column ow the columns
[floor(ow*W/OW), ceil((ow+1)*W/OW)). A program takes one oh (its row window is a scalar) and a block of
planes, and reads, for each row of that window, a (planes, OW, KW) tile: tap dw of column window ow, with
KW the widest column window (computed on the host). Taps are the fastest lane dimension, then windows,
so a warp's 32 lanes read one contiguous stretch of an input row (coalesced; per-output lanes reading
taps KW apart touch ~10 lines per instruction and leave the kernel bound by L1, not HBM). Row and column
windows are computed once per program and per column, never per tap; taps beyond a window are masked.
The rows of the window are unrolled (compile-time count), so all their loads are in flight together.
Very wide windows (global-pool-like shapes) take a per-output kernel with runtime tap loops instead.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]

# (tile elements per program row: planes * OW * KW, num_warps)
TILE: Tiles = (1024, 4)


@triton.jit
def adaptive_avg_pool2d_kernel(x_ptr, out_ptr, planes, H, W, OH, OW, KH: tl.constexpr, BLOCK_P: tl.constexpr,
                               BLOCK_OW: tl.constexpr, BLOCK_KW: tl.constexpr):
    oh = tl.program_id(0)
    p = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)
    ow = tl.arange(0, BLOCK_OW)
    dw = tl.arange(0, BLOCK_KW)
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    col = w0[:, None] + dw[None, :]
    col_ok = (ow < OW)[:, None] & (col < w1[:, None])
    ok = (p < planes)[:, None, None] & col_ok[None, :, :]
    at = x_ptr + (p.to(tl.int64) * H * W)[:, None, None] + (h0 * W + col)[None, :, :]
    rows = (h1 - h0) + tl.zeros((1, 1, 1), tl.int32)  # a tensor, not a scalar: the interpreter needs it
    acc = tl.zeros((BLOCK_P, BLOCK_OW, BLOCK_KW), tl.float32)
    for dh in tl.static_range(KH):
        acc += tl.load(at + dh * W, mask=ok & (dh < rows), other=0.0).to(tl.float32)
    count = ((h1 - h0) * (w1 - w0)).to(tl.float32)
    mean = tl.math.div_rn(tl.sum(acc, axis=2), count[None, :])
    dst = out_ptr + (p.to(tl.int64) * OH * OW)[:, None] + (oh * OW + ow)[None, :]
    tl.store(dst, mean.to(out_ptr.dtype.element_ty), mask=(p < planes)[:, None] & (ow < OW)[None, :])


@triton.jit
def adaptive_avg_pool2d_wide_kernel(x_ptr, out_ptr, total, H, W, OH, OW, MAX_KH, MAX_KW, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < total
    plane = offs // (OH * OW)
    pixel = offs - plane * (OH * OW)
    oh = pixel // OW
    ow = pixel - oh * OW
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    corner = x_ptr + plane.to(tl.int64) * H * W + (h0 * W + w0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for dh in range(0, MAX_KH):
        row_ok = valid & (h0 + dh < h1)
        for dw in range(0, MAX_KW):
            acc += tl.load(corner + (dh * W + dw), mask=row_ok & (w0 + dw < w1), other=0.0).to(tl.float32)
    count = ((h1 - h0) * (w1 - w0)).to(tl.float32)
    tl.store(out_ptr + offs, (acc / count).to(out_ptr.dtype.element_ty), mask=valid)


def _max_window(size: int, out: int) -> int:
    return max(-(-((i + 1) * size) // out) - (i * size) // out for i in range(out))


def adaptive_avg_pool2d(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor:
    n, c, h, w = x.shape
    out = torch.empty((n, c, out_h, out_w), dtype=x.dtype, device=x.device)
    kh, kw = _max_window(h, out_h), _max_window(w, out_w)
    elements, warps = TILE
    block_ow, block_kw = triton.next_power_of_2(out_w), triton.next_power_of_2(kw)
    if kh <= 16 and block_ow * block_kw <= elements:
        block_p = min(elements // (block_ow * block_kw), triton.next_power_of_2(n * c))
        grid = (out_h, triton.cdiv(n * c, block_p))
        adaptive_avg_pool2d_kernel[grid](x, out, n * c, h, w, out_h, out_w, KH=kh, BLOCK_P=block_p,
                                         BLOCK_OW=block_ow, BLOCK_KW=block_kw, num_warps=warps)
    else:
        total = n * c * out_h * out_w
        assert total < 2**31, "output indices are int32"
        adaptive_avg_pool2d_wide_kernel[(triton.cdiv(total, 256),)](x, out, total, h, w, out_h, out_w, kh, kw,
                                                                     BLOCK=256, num_warps=4)
    return out
