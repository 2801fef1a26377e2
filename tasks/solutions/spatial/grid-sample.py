"""Reference solution for spatial/grid-sample (bilinear, zeros padding, align_corners=False).

A program owns a block of output pixels of one sample: it computes the four taps and their
weights once, then loops over the channels reusing them.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def grid_sample_kernel(x_ptr, g_ptr, out_ptr, C, H, W, P, BLOCK: tl.constexpr):
    n = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < P
    gx = tl.load(g_ptr + (n * P + offs) * 2, mask=valid, other=0.0).to(tl.float32)
    gy = tl.load(g_ptr + (n * P + offs) * 2 + 1, mask=valid, other=0.0).to(tl.float32)
    ix = ((gx + 1.0) * W - 1.0) * 0.5
    iy = ((gy + 1.0) * H - 1.0) * 0.5
    fx0 = tl.floor(ix)
    fy0 = tl.floor(iy)
    wx1 = ix - fx0
    wy1 = iy - fy0
    x0 = fx0.to(tl.int32)
    y0 = fy0.to(tl.int32)
    x1 = x0 + 1
    y1 = y0 + 1
    okx0 = (x0 >= 0) & (x0 < W)
    okx1 = (x1 >= 0) & (x1 < W)
    oky0 = (y0 >= 0) & (y0 < H)
    oky1 = (y1 >= 0) & (y1 < H)
    m00 = valid & oky0 & okx0
    m01 = valid & oky0 & okx1
    m10 = valid & oky1 & okx0
    m11 = valid & oky1 & okx1
    w00 = (1.0 - wy1) * (1.0 - wx1)
    w01 = (1.0 - wy1) * wx1
    w10 = wy1 * (1.0 - wx1)
    w11 = wy1 * wx1
    for c in range(0, C):
        base = x_ptr + (n * C + c) * H * W
        v = tl.load(base + y0 * W + x0, mask=m00, other=0.0).to(tl.float32) * w00
        v += tl.load(base + y0 * W + x1, mask=m01, other=0.0).to(tl.float32) * w01
        v += tl.load(base + y1 * W + x0, mask=m10, other=0.0).to(tl.float32) * w10
        v += tl.load(base + y1 * W + x1, mask=m11, other=0.0).to(tl.float32) * w11
        tl.store(out_ptr + (n * C + c) * P + offs, v.to(out_ptr.dtype.element_ty), mask=valid)


def grid_sample(x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.shape
    _, oh, ow, _ = grid.shape
    x, grid = x.contiguous(), grid.contiguous()
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    p = oh * ow
    block = min(triton.next_power_of_2(p), 512)
    grid_sample_kernel[(n, triton.cdiv(p, block))](x, grid, out, c, h, w, p, BLOCK=block, num_warps=4)
    return out
