"""normalization/softmax, honest in an unusual style: the row maximum through ``and``-combined block
masks, the exponential through libdevice, the scale as a float scalar argument (fp32 when compiled), and
an autotuned block of rows. Each of these once failed in Triton's interpreter though right when compiled;
it must pass on the CPU."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.autotune(configs=[triton.Config({"ROWS": 1}), triton.Config({"ROWS": 2}), triton.Config({"ROWS": 4})],
                 key=["n"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, m, n, scale, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    inside = rows < m and cols < n
    x = tl.load(x_ptr + rows * n + cols, mask=inside, other=-float("inf")).to(tl.float32)
    x = x * scale.to(tl.float32)
    e = libdevice.exp(x - tl.max(x, axis=1)[:, None])
    out = e / tl.sum(e, axis=1)[:, None]
    tl.store(out_ptr + rows * n + cols, out.to(out_ptr.dtype.element_ty), mask=inside)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(m, meta["ROWS"]),)  # noqa: E731
    softmax_kernel[grid](x, out, m, n, 1.0, BLOCK=triton.next_power_of_2(n))
    return out
