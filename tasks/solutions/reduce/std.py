"""Reference solution for reduce/std: one pass over the row, Welford's update per lane in float32.

Each lane keeps the mean and the sum of squared deviations (M2) of its own elements, updated with every
full BLOCK (no masks; 1 / count is one scalar per block) and a masked tail; the lanes are then merged by
Chan's formula, M2 = sum(M2_lane + count_lane * (mean_lane - mean)^2). This stays exact to float32
rounding for rows whose mean is large against their spread (unlike E[x^2] - E[x]^2) while reading the row
once: a second pass over 16384 * 4-byte rows misses L2 and doubles the traffic. A few long rows (64 of 4M)
are split into chunks whose (mean, M2) a second small kernel merges the same way.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
LONG: Tiles = (2048, 4)
"""(BLOCK, num_warps) for rows longer than 1024 elements."""
SHORT: Tiles = (1024, 4)
"""(BLOCK, num_warps) for rows of up to 1024 elements."""
SPLIT: Tiles = (1024, 4)
"""(TARGET_PROGRAMS, MIN_BLOCKS): split rows while the grid stays under TARGET_PROGRAMS programs."""


@triton.jit
def std_kernel(x_ptr, out_ptr, mean_ptr, m2_ptr, n, chunk, FINAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    x_row = x_ptr + row * n
    begin = split * chunk
    count = tl.minimum(chunk, n - begin)
    full = count // BLOCK
    mean = tl.zeros((BLOCK,), tl.float32)
    m2 = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, full):
        x = tl.load(x_row + begin + i * BLOCK + tl.arange(0, BLOCK)).to(tl.float32)
        delta = x - mean
        mean += delta * (1.0 / (i + 1))
        m2 += delta * (x - mean)
    cols = full * BLOCK + tl.arange(0, BLOCK)
    in_tail = cols < count
    x = tl.load(x_row + begin + cols, mask=in_tail, other=0.0).to(tl.float32)
    delta = tl.where(in_tail, x - mean, 0.0)
    mean += delta * (1.0 / (full + 1))
    m2 += delta * (x - mean)
    lane_count = tl.where(in_tail, full + 1, full).to(tl.float32)
    chunk_mean = tl.sum(lane_count * mean, axis=0) / count
    spread = mean - chunk_mean
    chunk_m2 = tl.sum(m2 + lane_count * spread * spread, axis=0)
    if FINAL:
        tl.store(out_ptr + row, tl.sqrt(chunk_m2 / n).to(out_ptr.dtype.element_ty))
    else:
        part = row * tl.num_programs(1) + split
        tl.store(mean_ptr + part, chunk_mean)
        tl.store(m2_ptr + part, chunk_m2)


@triton.jit
def merge_kernel(mean_ptr, m2_ptr, out_ptr, n, chunk, splits, SPLITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, SPLITS)
    valid = offs < splits
    means = tl.load(mean_ptr + row * splits + offs, mask=valid, other=0.0)
    m2s = tl.load(m2_ptr + row * splits + offs, mask=valid, other=0.0)
    counts = tl.where(valid, tl.minimum(chunk, n - offs * chunk), 0).to(tl.float32)
    mean = tl.sum(counts * means, axis=0) / n
    spread = means - mean
    m2 = tl.sum(m2s + counts * spread * spread, axis=0)
    tl.store(out_ptr + row, tl.sqrt(m2 / n).to(out_ptr.dtype.element_ty))


def std(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), dtype=x.dtype, device=x.device)
    block, warps = SHORT if n <= SHORT[0] else LONG
    target_programs, min_blocks = SPLIT
    splits = min(triton.cdiv(n, min_blocks * block), triton.cdiv(target_programs, m))
    if splits <= 1:
        std_kernel[(m, 1)](x, out, out, out, n, n, FINAL=True, BLOCK=block, num_warps=warps)
        return out
    chunk = triton.cdiv(triton.cdiv(n, splits), block) * block
    splits = triton.cdiv(n, chunk)
    means = torch.empty((m, splits), dtype=torch.float32, device=x.device)
    m2s = torch.empty((m, splits), dtype=torch.float32, device=x.device)
    std_kernel[(m, splits)](x, out, means, m2s, n, chunk, FINAL=False, BLOCK=block, num_warps=warps)
    merge_kernel[(m,)](means, m2s, out, n, chunk, splits, SPLITS=triton.next_power_of_2(splits))
    return out
