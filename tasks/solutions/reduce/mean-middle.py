"""Reference solution for reduce/mean-middle: programs own (batch, block of columns, range of the middle
dimension) and walk down it with a (BLOCK_M, BLOCK_N) float32 tile, so every load is a coalesced slice of
rows; full tiles carry only the column mask, one masked tail tile ends the range.

With one program per (batch, column block), 64 * 1024 or 32 * 2048 columns give 512 programs, about 4
an SM, too few loads in flight for HBM3e. The middle dimension is therefore split until about
TARGET_PROGRAMS programs run, each over at least MIN_TILES tiles; their float32 column sums go to a
(B, splits, N) buffer that a second small kernel adds and divides by M.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int]
WIDE: Tiles = (32, 128, 4)
"""(BLOCK_M, BLOCK_N, num_warps) for N > 64 and 4-byte elements."""
WIDE_HALF: Tiles = (64, 128, 8)
"""(BLOCK_M, BLOCK_N, num_warps) for N > 64 and 2-byte elements: the same 16 KiB a tile."""
SPLIT: Tiles = (4096, 8, 1024)
"""(TARGET_PROGRAMS, MIN_TILES, BLOCK of the finishing kernel)."""


@triton.jit
def mean_middle_kernel(x_ptr, out_ptr, m, n, rows_per_split, FINAL: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    split = tl.program_id(2)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n
    begin = split * rows_per_split
    end = tl.minimum(begin + rows_per_split, m)
    full_end = begin + (end - begin) // BLOCK_M * BLOCK_M
    rows = tl.arange(0, BLOCK_M)
    ptrs = x_ptr + b * m * n + (begin + rows)[:, None].to(tl.int64) * n + cols[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for _ in range(begin, full_end, BLOCK_M):
        acc += tl.load(ptrs, mask=col_mask[None, :], other=0.0).to(tl.float32)
        ptrs += BLOCK_M * n
    tail = (full_end + rows)[:, None] < end
    acc += tl.load(ptrs, mask=tail & col_mask[None, :], other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    if FINAL:
        tl.store(out_ptr + b * n + cols, (total / m).to(out_ptr.dtype.element_ty), mask=col_mask)
    else:
        tl.store(out_ptr + (b * tl.num_programs(2) + split) * n + cols, total, mask=col_mask)


@triton.jit
def add_splits_kernel(part_ptr, out_ptr, m, n, splits, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n
    acc = tl.zeros((BLOCK,), tl.float32)
    for s in range(0, splits):
        acc += tl.load(part_ptr + (b * splits + s) * n + cols, mask=mask, other=0.0)
    tl.store(out_ptr + b * n + cols, (acc / m).to(out_ptr.dtype.element_ty), mask=mask)


def mean_middle(x: torch.Tensor) -> torch.Tensor:
    bsz, m, n = x.shape
    out = torch.empty((bsz, n), dtype=x.dtype, device=x.device)
    if n > 64:
        block_m, block_n, warps = WIDE if x.element_size() >= 4 else WIDE_HALF
    else:
        block_n = 32 if n <= 32 else 64  # narrow slices take tall tiles of 4096 elements
        block_m, warps = 4096 // block_n, 4
    target_programs, min_tiles, finish_block = SPLIT
    col_blocks = triton.cdiv(n, block_n)
    splits = min(triton.cdiv(target_programs, col_blocks * bsz), triton.cdiv(m, min_tiles * block_m))
    if splits <= 1:
        mean_middle_kernel[(col_blocks, bsz, 1)](x, out, m, n, m, FINAL=True, BLOCK_M=block_m,
                                                 BLOCK_N=block_n, num_warps=warps)
        return out
    rows_per_split = triton.cdiv(triton.cdiv(m, splits), block_m) * block_m
    splits = triton.cdiv(m, rows_per_split)
    partial = torch.empty((bsz, splits, n), dtype=torch.float32, device=x.device)
    mean_middle_kernel[(col_blocks, bsz, splits)](x, partial, m, n, rows_per_split, FINAL=False,
                                                  BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps)
    add_splits_kernel[(triton.cdiv(n, finish_block), bsz)](partial, out, m, n, splits, BLOCK=finish_block)
    return out
