"""Reference solution for normalization/masked-softmax.

Masked lanes load as -inf; a row whose every lane is masked keeps a maximum of -inf, which is
replaced by 0 before the exponent so the row's sum is 0 and its output is written as zeros.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def masked_softmax_kernel(x_ptr, m_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    run_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    run_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inb = cols < n_cols
        keep = tl.load(m_ptr + row_start + cols, mask=inb, other=0) != 0
        x = tl.load(x_ptr + row_start + cols, mask=inb & keep, other=-float("inf")).to(tl.float32)
        x = tl.where(keep, x, -float("inf"))
        new_max = tl.maximum(run_max, x)
        safe = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.exp(x - safe)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    row_max = tl.where(row_max == -float("inf"), 0.0, row_max)
    total = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    inv = tl.where(total > 0, 1.0 / total, 0.0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inb = cols < n_cols
        keep = tl.load(m_ptr + row_start + cols, mask=inb, other=0) != 0
        x = tl.load(x_ptr + row_start + cols, mask=inb & keep, other=-float("inf")).to(tl.float32)
        y = tl.where(keep, tl.exp(x - row_max) * inv, 0.0)
        tl.store(out_ptr + row_start + cols, y.to(out_ptr.dtype.element_ty), mask=inb)


def masked_softmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    x = x.contiguous()
    mask_bytes = mask.contiguous().view(torch.uint8)
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(n), 4096)
    warps = 4 if block <= 1024 else 8
    masked_softmax_kernel[(m,)](x, mask_bytes, out, n, BLOCK=block, num_warps=warps)
    return out
