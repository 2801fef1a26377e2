"""normalization/softmax: the store's mask is off by one (``<=``), so each row's program writes one element
(a zero: the lane loaded -inf) into the first element of the next row. Run in order, the next row's program
overwrites the damage; the output is a view of a buffer one element longer, so the last row's stray write
stays inside memory the candidate owns."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out.to(out_ptr.dtype.element_ty), mask=cols <= n_cols)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty(m * n + 1, dtype=x.dtype, device=x.device)[: m * n].view(m, n)
    block = triton.next_power_of_2(n + 1)
    softmax_kernel[(m,)](x, out, n, BLOCK=block)
    return out
