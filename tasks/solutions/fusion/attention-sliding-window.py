"""Reference solution for fusion/attention-sliding-window: flash attention that skips out-of-window keys.

Each program owns BLOCK_M queries of one (batch, head) and streams only the key blocks that overlap
[start_m - window + 1, start_m + BLOCK_M), so the work grows like S * window. A running max and sum keep
the softmax online; blocks straddling the window's edges are masked element by element.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def swa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, window, scale_log2, HEAD_DIM: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1).to(tl.int64) * S * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < S,
                other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    lo = (tl.maximum(start_m - window + 1, 0) // BLOCK_N) * BLOCK_N
    hi = tl.minimum(S, start_m + BLOCK_M)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < S
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale_log2
        keep = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] > offs_m[:, None] - window)
        s = tl.where(keep & (offs_n[None, :] < S), s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)


def attention_sliding_window(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    b, h, s, d = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    block_m, block_n = (128, 64) if s >= 1024 else (64, 64)
    warps = 8 if d >= 128 and block_m >= 128 else 4
    grid = (triton.cdiv(s, block_m), b * h)
    swa_kernel[grid](q, k, v, out, s, window, 1.4426950408889634 / math.sqrt(d), HEAD_DIM=d, BLOCK_M=block_m,
                     BLOCK_N=block_n, num_warps=warps, num_stages=3)
    return out
