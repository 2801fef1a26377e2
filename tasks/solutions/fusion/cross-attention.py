"""Reference solution for fusion/cross-attention: flash attention with separate query and key lengths.

Each program owns BLOCK_M queries of one (batch, head) and streams all Sk keys and values in blocks of
BLOCK_N with an online softmax; nothing of size Sq x Sk reaches memory.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def cross_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, SQ, SK, scale_log2, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    q_base = bh * SQ * HEAD_DIM
    kv_base = bh * SK * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < SQ,
                other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start_n in range(0, SK, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < SK
        k = tl.load(k_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale_log2
        s = tl.where(offs_n[None, :] < SK, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < SQ)


def cross_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, h, sq, d = q.shape
    sk = k.shape[2]
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    block_m, block_n = (128, 64) if sq >= 1024 else (64, 64)
    warps = 8 if d >= 128 and block_m >= 128 else 4
    grid = (triton.cdiv(sq, block_m), b * h)
    cross_attention_kernel[grid](q, k, v, out, sq, sk, 1.4426950408889634 / math.sqrt(d), HEAD_DIM=d,
                                 BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=3)
    return out
