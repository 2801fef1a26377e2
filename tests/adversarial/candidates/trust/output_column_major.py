"""normalization/softmax: a real softmax kernel that writes its rows into a column-major buffer
(``torch.empty_strided`` with strides (1, M)) and returns it: values equal, layout not the contiguous
tensor the statement asks for, and every row's stores are strided by M (uncoalesced on a GPU).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x_ptr + row * n + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row + cols * stride_out, e / tl.sum(e, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_strided((m, n), (1, m), dtype=x.dtype, device=x.device)
    softmax_kernel[(m,)](x, out, n, m, BLOCK=triton.next_power_of_2(n))
    return out
