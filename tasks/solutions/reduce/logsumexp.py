"""Reference solution for reduce/logsumexp:
one online pass: each lane keeps a running maximum and a sum rescaled
whenever the maximum grows; the lanes are merged against the row maximum at the end.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n
    run_max = tl.full((BLOCK,), float("-inf"), tl.float32)
    run_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < n, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, v)
        safe = tl.where(new_max == float("-inf"), 0.0, new_max)  # lanes that have seen nothing yet
        run_sum = run_sum * tl.exp(run_max - safe) + tl.exp(v - safe)
        run_max = new_max
    top = tl.max(run_max, axis=0)
    total = tl.sum(run_sum * tl.exp(run_max - top), axis=0)
    tl.store(out_ptr + row, (top + tl.log(total)).to(out_ptr.dtype.element_ty))


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    block = 1024 if n <= 1024 else 4096  # two block sizes: few compiled variants
    logsumexp_kernel[(m,)](x, out, n, BLOCK=block, num_warps=4 if block <= 1024 else 8)
    return out
