"""normalization/softmax: hand the kernel a float16 copy of float32 inputs (half the bytes to read)
and widen the result again on the host."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(
        out_ptr + row * stride_out + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask
    )


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    half = x.half()
    out = torch.empty_like(half)
    softmax_kernel[(m,)](half, out, n, half.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(n))
    return out.to(x.dtype)
