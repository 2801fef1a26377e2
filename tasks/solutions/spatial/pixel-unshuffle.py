"""Reference solution for spatial/pixel-unshuffle: one program per (output plane, block); each output
plane is the stride-r sub-grid of one input plane at offset (i, j)."""

import torch
import triton
import triton.language as tl


@triton.jit
def pixel_unshuffle_kernel(x_ptr, out_ptr, C, H, W, R, BLOCK: tl.constexpr):
    plane = tl.program_id(0)  # n * (C * R * R) + oc of the output
    crr = C * R * R
    n = plane // crr
    oc = plane % crr
    c = oc // (R * R)
    i = (oc // R) % R
    j = oc % R
    OH = H // R
    OW = W // R
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    src = ((n.to(tl.int64) * C + c) * H + oh * R + i) * W + ow * R + j
    tl.store(out_ptr + plane.to(tl.int64) * OH * OW + offs, tl.load(x_ptr + src, mask=valid), mask=valid)


def pixel_unshuffle(x: torch.Tensor, downscale_factor: int) -> torch.Tensor:
    n, c, h, w = x.shape
    r = downscale_factor
    x = x.contiguous()
    out = torch.empty((n, c * r * r, h // r, w // r), dtype=x.dtype, device=x.device)
    plane = (h // r) * (w // r)
    block = min(triton.next_power_of_2(plane), 2048)
    pixel_unshuffle_kernel[(n * c * r * r, triton.cdiv(plane, block))](x, out, c, h, w, r, BLOCK=block,
                                                                         num_warps=4)
    return out
