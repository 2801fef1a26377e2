"""Reference solution for index/masked-fill: a flat elementwise select; the bool mask is read as bytes."""

import torch
import triton
import triton.language as tl


@triton.jit
def masked_fill_kernel(x_ptr, mask_ptr, out_ptr, numel, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < numel
    x = tl.load(x_ptr + offs, mask=inb)
    fill = tl.load(mask_ptr + offs, mask=inb, other=0) != 0
    out = tl.where(fill, value, x.to(tl.float32)).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, out, mask=inb)


def masked_fill(x: torch.Tensor, mask: torch.Tensor, value: float) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    numel = x.numel()
    block = 2048
    masked_fill_kernel[(triton.cdiv(numel, block),)](x, mask.contiguous().view(torch.uint8), out, numel,
                                                     value, BLOCK=block, num_warps=4)
    return out
