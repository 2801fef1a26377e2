"""Reference solution for fusion/rope-attention: causal flash attention that rotates q and k on load.

q and k tiles are loaded as their two D/2 halves; the half-split rotation (cos/sin gathered per row from
the (S, D/2) tables) is done in float32 and the rotated halves rounded to the input dtype, so
q_rot . k_rot = q1' . k1' + q2' . k2' is two tl.dot calls of depth D/2. The rotated tensors never reach
memory.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _rotated_halves(ptr, cos_ptr, sin_ptr, base, offs, S, HALF: tl.constexpr):
    offs_h = tl.arange(0, HALF)
    ok = offs[:, None] < S
    at = base + offs[:, None] * (2 * HALF) + offs_h[None, :]
    x1 = tl.load(ptr + at, mask=ok, other=0.0)
    x2 = tl.load(ptr + at + HALF, mask=ok, other=0.0)
    c = tl.load(cos_ptr + offs[:, None] * HALF + offs_h[None, :], mask=ok, other=0.0)
    s = tl.load(sin_ptr + offs[:, None] * HALF + offs_h[None, :], mask=ok, other=0.0)
    r1 = x1.to(tl.float32) * c - x2.to(tl.float32) * s
    r2 = x2.to(tl.float32) * c + x1.to(tl.float32) * s
    return r1.to(x1.dtype), r2.to(x1.dtype)


@triton.jit
def rope_attention_kernel(q_ptr, k_ptr, v_ptr, cos_ptr, sin_ptr, o_ptr, S, scale_log2, HEAD_DIM: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1).to(tl.int64) * S * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q1, q2 = _rotated_halves(q_ptr, cos_ptr, sin_ptr, base, offs_m, S, HEAD_DIM // 2)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start_n in range(0, tl.minimum(S, start_m + BLOCK_M), BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k1, k2 = _rotated_halves(k_ptr, cos_ptr, sin_ptr, base, offs_n, S, HEAD_DIM // 2)
        s = (tl.dot(q1, tl.trans(k1)) + tl.dot(q2, tl.trans(k2))) * scale_log2
        s = tl.where((offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < S), s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_n[:, None] < S,
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)


def rope_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
                   ) -> torch.Tensor:
    b, h, s, d = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    block_m, block_n = (128, 64) if s >= 1024 else (64, 64)
    warps = 8 if d >= 128 and block_m >= 128 else 4
    grid = (triton.cdiv(s, block_m), b * h)
    rope_attention_kernel[grid](q, k, v, cos.contiguous(), sin.contiguous(), out, s,
                                1.4426950408889634 / math.sqrt(d), HEAD_DIM=d, BLOCK_M=block_m,
                                BLOCK_N=block_n, num_warps=warps, num_stages=3)
    return out
