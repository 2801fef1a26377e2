"""Reference solution for reduce/sum-rows:
BLOCK lanes each add a strided slice of the row in float32; one tree sum at the end.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_rows_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def sum_rows(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    block = 1024 if n <= 1024 else 4096  # two block sizes: few compiled variants
    sum_rows_kernel[(m,)](x, out, n, BLOCK=block, num_warps=4 if block <= 1024 else 8)
    return out
