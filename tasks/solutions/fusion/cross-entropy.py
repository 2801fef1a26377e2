"""Reference solution for fusion/cross-entropy: one pass over each row with a per-lane online logsumexp.

A program owns one row and walks it in BLOCK-wide chunks; every lane keeps its own running max and
rescaled sum of exponentials, merged across lanes once at the end, so each logit is read exactly once
and exp never overflows. The target logit is one scalar load.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * V
    offs = tl.arange(0, BLOCK)
    LOG2E = 1.4426950408889634
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, V, BLOCK):
        x = tl.load(base + start + offs, mask=start + offs < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.math.exp2((m - m_safe) * LOG2E) + tl.math.exp2((x - m_safe) * LOG2E)
        m = m_new
    m_row = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.math.exp2((m - m_row) * LOG2E)), axis=0)
    lse = m_row + tl.log(total)
    target = tl.load(target_ptr + row)
    valid = target != -100
    x_t = tl.load(base + tl.where(valid, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - x_t, 0.0))


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    m, v = logits.shape
    loss = torch.empty((m,), dtype=torch.float32, device=logits.device)
    block = min(triton.next_power_of_2(v), 4096)
    cross_entropy_kernel[(m,)](logits.contiguous(), target, loss, v, BLOCK=block,
                               num_warps=8 if block >= 2048 else 4)
    return loss
