"""spatial/pixel-shuffle that returns its INPUT itself when upscale_factor is 1 (the answer's values, but no
new tensor: the caller's output aliases x, and writing one changes the other). Nothing launches in that
call."""

import torch
import triton
import triton.language as tl


@triton.jit
def pixel_shuffle_kernel(x_ptr, out_ptr, C, H, W, R, BLOCK: tl.constexpr):
    plane = tl.program_id(0)  # n * C + c of the output
    n = plane // C
    c = plane % C
    OW = W * R
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < H * R * OW
    oh = offs // OW
    ow = offs % OW
    src_c = c * R * R + (oh % R) * R + (ow % R)
    src = ((n.to(tl.int64) * C * R * R + src_c) * H + oh // R) * W + ow // R
    tl.store(out_ptr + plane.to(tl.int64) * H * R * OW + offs, tl.load(x_ptr + src, mask=valid), mask=valid)


def pixel_shuffle(x: torch.Tensor, upscale_factor: int) -> torch.Tensor:
    n, crr, h, w = x.shape
    r = upscale_factor
    c = crr // (r * r)
    if r == 1:
        return x
    out = torch.empty((n, c, h * r, w * r), dtype=x.dtype, device=x.device)
    plane = h * r * w * r
    block = min(triton.next_power_of_2(plane), 2048)
    pixel_shuffle_kernel[(n * c, triton.cdiv(plane, block))](x, out, c, h, w, r, BLOCK=block, num_warps=4)
    return out
