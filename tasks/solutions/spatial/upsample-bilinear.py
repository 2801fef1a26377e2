"""Reference solution for spatial/upsample-bilinear (align_corners=False, no antialiasing).

Source coordinates follow PyTorch: y = max((i + 0.5) * H / OH - 0.5, 0), the upper neighbour
clamped to the last row; the four taps are blended in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def bilinear_kernel(x_ptr, out_ptr, H, W, OH, OW, scale_h, scale_w, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    i = offs // OW
    j = offs % OW
    y = tl.maximum((i.to(tl.float32) + 0.5) * scale_h - 0.5, 0.0)
    xx = tl.maximum((j.to(tl.float32) + 0.5) * scale_w - 0.5, 0.0)
    y0 = y.to(tl.int32)
    x0 = xx.to(tl.int32)
    ly = y - y0.to(tl.float32)
    lx = xx - x0.to(tl.float32)
    y1 = tl.minimum(y0 + 1, H - 1)
    x1 = tl.minimum(x0 + 1, W - 1)
    base = x_ptr + plane * H * W
    v00 = tl.load(base + y0 * W + x0, mask=valid, other=0.0).to(tl.float32)
    v01 = tl.load(base + y0 * W + x1, mask=valid, other=0.0).to(tl.float32)
    v10 = tl.load(base + y1 * W + x0, mask=valid, other=0.0).to(tl.float32)
    v11 = tl.load(base + y1 * W + x1, mask=valid, other=0.0).to(tl.float32)
    top = v00 * (1.0 - lx) + v01 * lx
    bottom = v10 * (1.0 - lx) + v11 * lx
    out = top * (1.0 - ly) + bottom * ly
    tl.store(out_ptr + plane * OH * OW + offs, out.to(out_ptr.dtype.element_ty), mask=valid)


def upsample_bilinear(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.contiguous()
    out = torch.empty((n, c, out_h, out_w), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(out_h * out_w), 1024)
    grid = (n * c, triton.cdiv(out_h * out_w, block))
    bilinear_kernel[grid](x, out, h, w, out_h, out_w, h / out_h, w / out_w, BLOCK=block, num_warps=4)
    return out
