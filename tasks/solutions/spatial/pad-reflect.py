"""Reference solution for spatial/pad-reflect: each output position maps to its mirrored source
(i < 0 -> -i, i >= H -> 2 * (H - 1) - i), which is always inside the image for pads < size."""

import torch
import triton
import triton.language as tl


@triton.jit
def pad_reflect_kernel(x_ptr, out_ptr, H, W, OH, OW, pad_top, pad_left, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    i = offs // OW - pad_top
    j = offs % OW - pad_left
    i = tl.where(i < 0, -i, i)
    i = tl.where(i >= H, 2 * (H - 1) - i, i)
    j = tl.where(j < 0, -j, j)
    j = tl.where(j >= W, 2 * (W - 1) - j, j)
    v = tl.load(x_ptr + plane * H * W + i * W + j, mask=valid)
    tl.store(out_ptr + plane * OH * OW + offs, v, mask=valid)


def pad_reflect(x: torch.Tensor, pad_left: int, pad_right: int, pad_top: int,
                pad_bottom: int) -> torch.Tensor:
    n, c, h, w = x.shape
    oh, ow = h + pad_top + pad_bottom, w + pad_left + pad_right
    x = x.contiguous()
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(oh * ow), 2048)
    grid = (n * c, triton.cdiv(oh * ow, block))
    pad_reflect_kernel[grid](x, out, h, w, oh, ow, pad_top, pad_left, BLOCK=block, num_warps=4)
    return out
