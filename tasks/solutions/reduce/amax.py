"""Reference solution for reduce/amax: a running maximum per lane, masked lanes at -inf; exact, since max
never rounds.

A row is swept in full BLOCKs without masks and one masked tail. One program per row would leave most of
the 132 SMs idle on a few long rows (64 rows of 4M), so such rows are split into chunks of at least
MIN_BLOCKS blocks, about TARGET_PROGRAMS programs in all, whose partial maxima a second small kernel
combines.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
LONG: Tiles = (4096, 8)
"""(BLOCK, num_warps) for rows longer than 1024 elements."""
SHORT: Tiles = (1024, 4)
"""(BLOCK, num_warps) for rows of up to 1024 elements."""
SPLIT: Tiles = (4096, 2)
"""(TARGET_PROGRAMS, MIN_BLOCKS): split rows while the grid stays under TARGET_PROGRAMS programs."""


@triton.jit
def amax_kernel(x_ptr, out_ptr, n, chunk, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    x_row = x_ptr + row * n
    begin = split * chunk
    end = tl.minimum(begin + chunk, n)
    full_end = begin + (end - begin) // BLOCK * BLOCK
    acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(begin, full_end, BLOCK):
        acc = tl.maximum(acc, tl.load(x_row + start + tl.arange(0, BLOCK)).to(tl.float32))
    cols = full_end + tl.arange(0, BLOCK)
    tail = tl.load(x_row + cols, mask=cols < end, other=float("-inf")).to(tl.float32)
    acc = tl.maximum(acc, tail)
    tl.store(out_ptr + row * tl.num_programs(1) + split, tl.max(acc, axis=0).to(out_ptr.dtype.element_ty))


@triton.jit
def max_partials_kernel(part_ptr, out_ptr, splits, SPLITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, SPLITS)
    parts = tl.load(part_ptr + row * splits + offs, mask=offs < splits, other=float("-inf"))
    tl.store(out_ptr + row, tl.max(parts, axis=0).to(out_ptr.dtype.element_ty))


def amax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    block, warps = SHORT if n <= SHORT[0] else LONG
    target_programs, min_blocks = SPLIT
    splits = min(triton.cdiv(n, min_blocks * block), triton.cdiv(target_programs, m))
    if splits <= 1:
        amax_kernel[(m, 1)](x, out, n, n, BLOCK=block, num_warps=warps)
        return out
    chunk = triton.cdiv(triton.cdiv(n, splits), block) * block
    splits = triton.cdiv(n, chunk)
    partial = torch.empty((m, splits), dtype=torch.float32, device=x.device)
    amax_kernel[(m, splits)](x, partial, n, chunk, BLOCK=block, num_warps=warps)
    max_partials_kernel[(m,)](partial, out, splits, SPLITS=triton.next_power_of_2(splits))
    return out
