"""Reference solution for reduce/sum-all: a fixed number of programs (at most 1024) each sum a
grid-strided share of the vector into one float32 partial; a second, single-program kernel adds the
partials in a fixed order. Deterministic, and the partials keep the error of a tree-like order."""

import torch
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, n, iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    stride = tl.num_programs(0).to(tl.int64) * BLOCK
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(0, iters):
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(tl.float32)
        offsets += stride
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def finish_sum_kernel(part_ptr, out_ptr, parts, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    total = tl.sum(tl.load(part_ptr + idx, mask=idx < parts, other=0.0), axis=0)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def sum_all(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    block = 4096
    parts = max(1, min(triton.cdiv(n, block), 1024))
    iters = triton.cdiv(n, parts * block)
    part = torch.empty((parts,), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    partial_sum_kernel[(parts,)](x, part, n, iters, BLOCK=block, num_warps=8)
    finish_sum_kernel[(1,)](part, out, parts, BLOCK=triton.next_power_of_2(parts), num_warps=4)
    return out
