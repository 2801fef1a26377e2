"""normalization/softmax, honest: a 2-D grid whose programs take rows from the end, two rows apart, each
masked exactly; the result does not depend on the order the programs run in."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, m, n_cols, BLOCK: tl.constexpr):
    row = m - 1 - (tl.program_id(1) * 2 + tl.program_id(0))
    if row >= 0:
        cols = tl.arange(0, BLOCK)
        inside = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=inside, other=-float("inf")).to(tl.float32)
        num = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty),
                 mask=inside)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(2, triton.cdiv(m, 2))](x, out, m, n, BLOCK=triton.next_power_of_2(n))
    return out
