"""Honest reduce/cumsum (for race_intra_program_scan): the scan stays in registers (tl.associative_scan
with an explicit add combiner, no global scratch shared between lanes), one program per row, the
running float32 carry passed from block to block."""
import torch
import triton
import triton.language as tl


@triton.jit
def _plus(a, b):
    return a + b


@triton.jit
def row_scan(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < n
        v = tl.load(x_ptr + row * n + cols, mask=ok, other=0.0).to(tl.float32)
        run = tl.associative_scan(v, 0, _plus) + carry
        tl.store(out_ptr + row * n + cols, run.to(out_ptr.dtype.element_ty), mask=ok)
        carry += tl.sum(v, axis=0)


def cumsum(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    row_scan[(m,)](x, out, n, BLOCK=512)
    return out
