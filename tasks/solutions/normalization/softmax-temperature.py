"""Reference solution for normalization/softmax-temperature.

The maximum is subtracted before dividing by the temperature, (x - max) / T, which keeps the
exponent's rounding error relative to the distance from the maximum rather than to x / T.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_temperature_kernel(x_ptr, out_ptr, n_cols, inv_t, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * n_cols
    run_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        run_max = tl.maximum(run_max, x)
    row_max = tl.max(run_max, axis=0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        acc += tl.exp((x - row_max) * inv_t)
    inv_sum = 1.0 / tl.sum(acc, axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp((x - row_max) * inv_t) * inv_sum
        tl.store(out_ptr + row_start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax_temperature(x: torch.Tensor, temperature: float) -> torch.Tensor:
    m, n = x.shape
    x = x.contiguous()
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(n), 4096)
    warps = 4 if block <= 1024 else 8
    softmax_temperature_kernel[(m,)](x, out, n, 1.0 / temperature, BLOCK=block, num_warps=warps)
    return out
