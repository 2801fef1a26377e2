"""math/add (honest): no mask on full tiles; the last tile is shifted back to end at the last element, so it
overlaps the tile before it and two programs store the same sums to the same addresses. Writing the same
bytes twice is no race: whichever store lands last, memory holds the sum."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_shifted_tail(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.minimum(tl.program_id(0) * BLOCK, tl.maximum(n - BLOCK, 0))
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_shifted_tail[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
