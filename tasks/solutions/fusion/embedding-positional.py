"""Reference solution for fusion/embedding-positional: gather token rows and add position rows.

A 2-D grid: one program per block of tokens and block of features; each token's id is loaded once and
its table row gathered with contiguous loads, then the position row (token % S) is added in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_positional_kernel(ids_ptr, tok_ptr, pos_ptr, out_ptr, T, S, D, BLOCK_T: tl.constexpr,
                                BLOCK_D: tl.constexpr):
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    feats = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_ok = tokens < T
    mask = t_ok[:, None] & (feats < D)[None, :]
    ids = tl.load(ids_ptr + tokens, mask=t_ok, other=0)
    pos = (tokens % S).to(tl.int64)
    e = tl.load(tok_ptr + ids[:, None] * D + feats[None, :], mask=mask, other=0.0).to(tl.float32)
    p = tl.load(pos_ptr + pos[:, None] * D + feats[None, :], mask=mask, other=0.0).to(tl.float32)
    out = (e + p).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + tokens[:, None].to(tl.int64) * D + feats[None, :], out, mask=mask)


def embedding_positional(ids: torch.Tensor, token_table: torch.Tensor, pos_table: torch.Tensor
                         ) -> torch.Tensor:
    b, s = ids.shape
    d = token_table.shape[1]
    out = torch.empty((b, s, d), dtype=token_table.dtype, device=token_table.device)
    block_d = min(triton.next_power_of_2(d), 512)
    grid = (triton.cdiv(b * s, 16), triton.cdiv(d, block_d))
    embedding_positional_kernel[grid](ids.contiguous(), token_table, pos_table, out, b * s, s, d, BLOCK_T=16,
                                      BLOCK_D=block_d, num_warps=4)
    return out
