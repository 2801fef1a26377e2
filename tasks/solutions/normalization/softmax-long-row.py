"""Reference solution for normalization/softmax-long-row: a split-row (two-kernel) softmax.

Kernel 1: each program reduces one CHUNK of a row to a partial (max, sum of exp(x - max)).
Kernel 2: each program combines all partials of its row (a few thousand at most) into the row's
max and sum, then writes its own chunk. The row is read twice and written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def partial_kernel(x_ptr, pmax_ptr, psum_ptr, n_cols, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    base = x_ptr + row.to(tl.int64) * n_cols
    run_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    run_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, CHUNK, BLOCK):
        cols = chunk * CHUNK + start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, x)
        safe = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.exp(x - safe)
        run_max = new_max
    m = tl.max(run_max, axis=0)
    safe_m = tl.where(m == -float("inf"), 0.0, m)
    s = tl.sum(run_sum * tl.exp(run_max - safe_m), axis=0)
    tl.store(pmax_ptr + row * n_chunks + chunk, m)
    tl.store(psum_ptr + row * n_chunks + chunk, s)


@triton.jit
def write_kernel(x_ptr, out_ptr, pmax_ptr, psum_ptr, n_cols, n_chunks, CHUNK: tl.constexpr,
                 BLOCK: tl.constexpr, BLOCK_P: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    run_max = tl.full((BLOCK_P,), -float("inf"), tl.float32)
    run_sum = tl.zeros((BLOCK_P,), tl.float32)
    for start in range(0, n_chunks, BLOCK_P):
        idx = start + tl.arange(0, BLOCK_P)
        ok = idx < n_chunks
        pm = tl.load(pmax_ptr + row * n_chunks + idx, mask=ok, other=-float("inf"))
        ps = tl.load(psum_ptr + row * n_chunks + idx, mask=ok, other=0.0)
        new_max = tl.maximum(run_max, pm)
        safe = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + ps * tl.exp(pm - safe)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    inv_sum = 1.0 / tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    base = row.to(tl.int64) * n_cols
    for start in range(0, CHUNK, BLOCK):
        cols = chunk * CHUNK + start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) * inv_sum
        tl.store(out_ptr + base + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax_long_row(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    x = x.contiguous()
    out = torch.empty_like(x)
    block = 4096
    chunk = 16 * block if n >= (1 << 22) else block
    n_chunks = triton.cdiv(n, chunk)
    pmax = torch.empty((m, n_chunks), dtype=torch.float32, device=x.device)
    psum = torch.empty((m, n_chunks), dtype=torch.float32, device=x.device)
    grid = (m, n_chunks)
    partial_kernel[grid](x, pmax, psum, n, n_chunks, CHUNK=chunk, BLOCK=block, num_warps=8)
    block_p = min(triton.next_power_of_2(n_chunks), 1024)
    write_kernel[grid](x, out, pmax, psum, n, n_chunks, CHUNK=chunk, BLOCK=block, BLOCK_P=block_p,
                       num_warps=8)
    return out
