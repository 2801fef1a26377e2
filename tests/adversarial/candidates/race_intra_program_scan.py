"""cumsum by a Hillis-Steele scan through global scratch: each step every lane stores its partial and then
loads the one `d` lanes to its left, with no barrier between the lanes' stores and loads. The
interpreter runs a whole block's load before its store, as one vector op, so the steps are clean;
compiled, lanes of different warps read a neighbour's value from the wrong step (a race)."""
import torch
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, scratch_ptr, n, BLOCK: tl.constexpr, LOG: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    mine = scratch_ptr + row * BLOCK + lanes
    carry = 0.0
    for start in range(0, n, BLOCK):
        cols = start + lanes
        ok = cols < n
        cur = tl.load(x_ptr + row * n + cols, mask=ok, other=0.0).to(tl.float32)
        block_total = tl.sum(cur, axis=0)
        tl.store(mine, cur)
        for k in tl.static_range(LOG):
            left = tl.load(mine - (1 << k), mask=lanes >= (1 << k), other=0.0)
            cur = cur + left
            tl.store(mine, cur)
        tl.store(out_ptr + row * n + cols, (cur + carry).to(out_ptr.dtype.element_ty), mask=ok)
        carry = carry + block_total


def cumsum(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    block = 256
    scratch = torch.empty((m, block), dtype=torch.float32, device=x.device)
    scan_kernel[(m,)](x, out, scratch, n, BLOCK=block, LOG=8)
    return out
