"""Reference solution for index/index-select (columns): each program owns ROWS whole rows.

out[i, j] = x[i, index[j]]: a program loads each block of BLOCK_K indices once for its ROWS rows and
walks every column block of them, so a row of x is fetched from memory once and then read from its
SM's L1 (and L2) while its columns are selected. A grid of (row tiles, column tiles) ordered row-fastest
fetches every row once per column tile instead. Output tiles are contiguous, wide stores.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int]
"""(ROWS, BLOCK_K, num_warps); scripts/triton_ref_sweep.py times the alternatives."""
TILES: Tiles = (4, 1024, 4)


@triton.jit
def index_select_kernel(x_ptr, idx_ptr, out_ptr, n_rows, n_cols, k_cols, ROWS: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows[:, None] < n_rows
    rows64 = rows[:, None].to(tl.int64)
    x_row = x_ptr + rows64 * n_cols
    for k0 in range(0, k_cols, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        col_ok = cols < k_cols
        idx = tl.load(idx_ptr + cols, mask=col_ok, other=0)
        mask = row_ok & col_ok[None, :]
        vals = tl.load(x_row + idx[None, :], mask=mask)
        tl.store(out_ptr + rows64 * k_cols + cols[None, :], vals, mask=mask)


def index_select(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    k = index.shape[0]
    out = torch.empty((m, k), dtype=x.dtype, device=x.device)
    rows, block_k, warps = TILES
    block_k = min(block_k, max(16, triton.next_power_of_2(k)))
    index_select_kernel[(triton.cdiv(m, rows),)](x, index, out, m, n, k, ROWS=rows, BLOCK_K=block_k,
                                                 num_warps=warps)
    return out
