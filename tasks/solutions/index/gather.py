"""Reference solution for index/gather: each program owns whole rows and walks their output columns.

out[i, :] reads x[i, :] at random positions; the values are an indirect load from the row. Random
positions touch most of a row's 32-byte sectors, so what matters is that a row is fetched from memory
once: a program takes ROWS rows and every column block of them, so the row stays in its SM's L1 (and L2)
while its columns are gathered. A grid of (row tiles, column tiles) ordered row-fastest fetches every
row once per column tile instead. The index and output tiles are contiguous, wide loads and stores.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int]
"""(ROWS, BLOCK_K, num_warps); scripts/triton_ref_sweep.py times the alternatives."""
TILES: Tiles = (2, 1024, 4)


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n_rows, n_cols, k_cols, ROWS: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows[:, None] < n_rows
    rows64 = rows[:, None].to(tl.int64)
    x_row = x_ptr + rows64 * n_cols
    for k0 in range(0, k_cols, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)[None, :]
        mask = row_ok & (cols < k_cols)
        idx = tl.load(idx_ptr + rows64 * k_cols + cols, mask=mask, other=0)
        vals = tl.load(x_row + idx, mask=mask)
        tl.store(out_ptr + rows64 * k_cols + cols, vals, mask=mask)


def gather(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    k = index.shape[1]
    out = torch.empty((m, k), dtype=x.dtype, device=x.device)
    rows, block_k, warps = TILES
    block_k = min(block_k, max(16, triton.next_power_of_2(k)))
    gather_kernel[(triton.cdiv(m, rows),)](x, index, out, m, n, k, ROWS=rows, BLOCK_K=block_k,
                                           num_warps=warps)
    return out
