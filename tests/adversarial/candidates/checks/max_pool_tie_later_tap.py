"""pooling/max-pool2d-indices letting a later tap of the window win a tie (>= instead of >): torch keeps the
smallest index. N(0, 1) values tie in a handful of windows at most; the held-out case of values rounded to
multiples of 0.5 ties in most of them."""

import torch
import triton
import triton.language as tl


@triton.jit
def max_pool_kernel(x_ptr, out_ptr, idx_ptr, H, W, OH, OW, K, S, P, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    best = tl.full((BLOCK,), -float("inf"), tl.float32)
    best_idx = tl.full((BLOCK,), -1, tl.int64)
    for kh in range(0, K):
        ih = oh * S - P + kh
        for kw in range(0, K):
            iw = ow * S - P + kw
            ok = valid & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            flat = ih * W + iw
            v = tl.load(x_ptr + plane * H * W + flat, mask=ok, other=-float("inf")).to(tl.float32)
            take = ok & ((v >= best) | (best_idx < 0))
            best = tl.where(take, v, best)
            best_idx = tl.where(take, flat.to(tl.int64), best_idx)
    tl.store(out_ptr + plane * OH * OW + offs, best.to(out_ptr.dtype.element_ty), mask=valid)
    tl.store(idx_ptr + plane * OH * OW + offs, best_idx, mask=valid)


def max_pool2d_with_indices(x: torch.Tensor, kernel_size: int, stride: int,
                            padding: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, c, h, w = x.shape
    oh = (h + 2 * padding - kernel_size) // stride + 1
    ow = (w + 2 * padding - kernel_size) // stride + 1
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    idx = torch.empty((n, c, oh, ow), dtype=torch.int64, device=x.device)
    block = min(triton.next_power_of_2(oh * ow), 1024)
    grid = (n * c, triton.cdiv(oh * ow, block))
    max_pool_kernel[grid](x, out, idx, h, w, oh, ow, kernel_size, stride, padding, BLOCK=block)
    return out, idx
