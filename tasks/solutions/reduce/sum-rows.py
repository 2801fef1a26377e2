"""Reference solution for reduce/sum-rows:
BLOCK lanes each add a strided slice of the row in float32; one tree sum at the end. A few long
rows (64 of 4M) would leave most SMs idle with one program per row, so such rows are split into
chunks whose float32 partial sums a second pass adds (no atomics: every run gives the same answer).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_rows_kernel(x_ptr, out_ptr, n, chunk, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    x_row = x_ptr + row * n
    begin = split * chunk
    end = tl.minimum(begin + chunk, n)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(begin, end, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < end, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * tl.num_programs(1) + split, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


@triton.jit
def add_partials_kernel(part_ptr, out_ptr, splits, SPLITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, SPLITS)
    parts = tl.load(part_ptr + row * splits + offs, mask=offs < splits, other=0.0)
    tl.store(out_ptr + row, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty))


def sum_rows(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    block = 1024 if n <= 1024 else 4096  # two block sizes: few compiled variants
    warps = 4 if block <= 1024 else 8
    splits = min(triton.cdiv(n, 4 * block), triton.cdiv(1024, m))  # ~1024 programs, 4+ blocks each
    if splits <= 1:
        sum_rows_kernel[(m, 1)](x, out, n, n, BLOCK=block, num_warps=warps)
        return out
    chunk = triton.cdiv(triton.cdiv(n, splits), block) * block
    splits = triton.cdiv(n, chunk)
    partial = torch.empty((m, splits), dtype=torch.float32, device=x.device)
    sum_rows_kernel[(m, splits)](x, partial, n, chunk, BLOCK=block, num_warps=warps)
    add_partials_kernel[(m,)](partial, out, splits, SPLITS=triton.next_power_of_2(splits))
    return out
