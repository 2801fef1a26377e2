"""Reference solution for index/embedding: a tile of (tokens, features) per program.

Token ids are loaded once per tile; each table row is read contiguously.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(idx_ptr, w_ptr, out_ptr, n_tokens, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    tok_ok = toks < n_tokens
    ids = tl.load(idx_ptr + toks, mask=tok_ok, other=0).to(tl.int64)
    mask = tok_ok[:, None] & (cols[None, :] < dim)
    vals = tl.load(w_ptr + ids[:, None] * dim + cols[None, :], mask=mask)
    tl.store(out_ptr + toks[:, None].to(tl.int64) * dim + cols[None, :], vals, mask=mask)


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    b, s = indices.shape
    v, d = weight.shape
    indices, weight = indices.contiguous(), weight.contiguous()
    out = torch.empty((b, s, d), dtype=weight.dtype, device=weight.device)
    block_t, block_d = 8, min(triton.next_power_of_2(d), 512)
    grid = (triton.cdiv(b * s, block_t), triton.cdiv(d, block_d))
    embedding_kernel[grid](indices, weight, out, b * s, d, BLOCK_T=block_t, BLOCK_D=block_d, num_warps=4)
    return out
