"""Reference solution for spatial/im2col: one program per (sample, patch row (c, kh, kw), block of
output positions); each output row is a strided, shifted view of one input plane."""

import torch
import triton
import triton.language as tl


@triton.jit
def im2col_kernel(x_ptr, out_ptr, C, H, W, OH, OW, K, S, P, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # n * (C * K * K) + (c * K + kh) * K + kw
    ckk = C * K * K
    n = row // ckk
    r = row % ckk
    c = r // (K * K)
    kh = (r // K) % K
    kw = r % K
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    ih = (offs // OW) * S - P + kh * D
    iw = (offs % OW) * S - P + kw * D
    inside = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    v = tl.load(x_ptr + (n.to(tl.int64) * C + c) * H * W + ih * W + iw, mask=inside, other=0.0)
    tl.store(out_ptr + row.to(tl.int64) * OH * OW + offs, v, mask=valid)


def im2col(x: torch.Tensor, kernel_size: int, stride: int, padding: int, dilation: int) -> torch.Tensor:
    n, c, h, w = x.shape
    k = kernel_size
    oh = (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    x = x.contiguous()
    out = torch.empty((n, c * k * k, oh * ow), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(oh * ow), 2048)
    grid = (n * c * k * k, triton.cdiv(oh * ow, block))
    im2col_kernel[grid](x, out, c, h, w, oh, ow, k, stride, padding, dilation, BLOCK=block, num_warps=4)
    return out
