"""Reference solution for fusion/moe-gating: softmax and iterative top-k over a block of tokens.

Each program holds BLOCK_T tokens x all E logits in registers. The softmax statistics come from one max and
one sum; then TOP_K rounds each take the row maximum, resolve ties to the lowest expert index with a min
over the matching columns, record the probability and knock that expert out. The selected weights are
collected in a (BLOCK_T, TOP_K) tile, optionally renormalised, and written once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def moe_gating_kernel(logits_ptr, w_ptr, idx_ptr, T, E, TOP_K: tl.constexpr, RENORMALIZE: tl.constexpr,
                      BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, BLOCK_E)
    r_ok = rows < T
    x = tl.load(logits_ptr + rows[:, None].to(tl.int64) * E + cols[None, :],
                mask=r_ok[:, None] & (cols < E)[None, :], other=-float("inf")).to(tl.float32)
    x = tl.where((cols < E)[None, :], x, -float("inf"))
    row_max = tl.max(x, axis=1)
    row_max = tl.where(r_ok, row_max, 0.0)
    denom = tl.sum(tl.math.exp2((x - row_max[:, None]) * 1.4426950408889634), axis=1)
    slots = tl.arange(0, BLOCK_K)
    weights = tl.zeros((BLOCK_T, BLOCK_K), tl.float32)
    index = tl.zeros((BLOCK_T, BLOCK_K), tl.int64)
    remaining = x
    for i in tl.static_range(TOP_K):
        best = tl.max(remaining, axis=1)
        pick = tl.min(tl.where(remaining == best[:, None], cols[None, :], BLOCK_E), axis=1)
        p = tl.math.exp2((best - row_max) * 1.4426950408889634) / denom
        weights = tl.where(slots[None, :] == i, p[:, None], weights)
        index = tl.where(slots[None, :] == i, pick.to(tl.int64)[:, None], index)
        remaining = tl.where(cols[None, :] == pick[:, None], -float("inf"), remaining)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, axis=1)[:, None]
    out = rows[:, None].to(tl.int64) * TOP_K + slots[None, :]
    mask = r_ok[:, None] & (slots < TOP_K)[None, :]
    tl.store(w_ptr + out, weights, mask=mask)
    tl.store(idx_ptr + out, index, mask=mask)


def moe_gating(logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    t, e = logits.shape
    weights = torch.empty((t, top_k), dtype=torch.float32, device=logits.device)
    index = torch.empty((t, top_k), dtype=torch.int64, device=logits.device)
    block_e = triton.next_power_of_2(e)
    block_t = max(4096 // block_e, 1)
    moe_gating_kernel[(triton.cdiv(t, block_t),)](logits.contiguous(), weights, index, t, e, TOP_K=top_k,
                                                  RENORMALIZE=renormalize, BLOCK_T=block_t, BLOCK_E=block_e,
                                                  BLOCK_K=triton.next_power_of_2(top_k),
                                                  num_warps=8 if block_t * block_e >= 4096 else 4)
    return weights, index
