"""normalization/softmax, honest: the block size comes from ``triton.heuristics``, the grid is a lambda,
the output is allocated with ``torch.empty_strided`` (row-major strides) and rows are processed in
chunks by an online softmax. Must pass."""

import torch
import triton
import triton.language as tl


@triton.heuristics({"BLOCK": lambda args: min(1024, triton.next_power_of_2(args["n"]))})
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n
    top = tl.full((), -float("inf"), tl.float32)
    total = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + base + cols, mask=cols < n, other=-float("inf")).to(tl.float32)
        new_top = tl.maximum(top, tl.max(v, axis=0))
        total = total * tl.exp(top - new_top) + tl.sum(tl.exp(v - new_top), axis=0)
        top = new_top
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n
        v = tl.load(x_ptr + base + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + base + cols, tl.exp(v - top) / total, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_strided((m, n), (n, 1), dtype=x.dtype, device=x.device)
    softmax_kernel[lambda meta: (m,)](x, out, n)
    return out
