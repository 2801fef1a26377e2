"""Reference solution for pooling/max-pool2d: one program per (plane, block of output pixels).

Each program loops over the window's kernel_size^2 offsets; out-of-range taps load -inf.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def max_pool2d_kernel(x_ptr, out_ptr, H, W, OH, OW, K, S, P, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    x_plane = x_ptr + plane * H * W
    acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    for kh in range(0, K):
        ih = oh * S - P + kh
        row_ok = valid & (ih >= 0) & (ih < H)
        for kw in range(0, K):
            iw = ow * S - P + kw
            ok = row_ok & (iw >= 0) & (iw < W)
            v = tl.load(x_plane + ih * W + iw, mask=ok, other=-float("inf")).to(tl.float32)
            acc = tl.maximum(acc, v)
    tl.store(out_ptr + plane * OH * OW + offs, acc.to(out_ptr.dtype.element_ty), mask=valid)


def max_pool2d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    n, c, h, w = x.shape
    oh = (h + 2 * padding - kernel_size) // stride + 1
    ow = (w + 2 * padding - kernel_size) // stride + 1
    x = x.contiguous()
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(oh * ow), 1024)
    grid = (n * c, triton.cdiv(oh * ow, block))
    max_pool2d_kernel[grid](x, out, h, w, oh, ow, kernel_size, stride, padding, BLOCK=block, num_warps=4)
    return out
