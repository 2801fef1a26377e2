"""Reference solution for fusion/attention-key-padding: flash attention whose key loop stops at the length.

Each program owns BLOCK_M queries of one (batch, head), reads lengths[batch] and streams only the first
lengths[batch] keys (the last block is masked), so padded keys cost neither loads nor FLOPs.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def key_padding_kernel(q_ptr, k_ptr, v_ptr, len_ptr, o_ptr, H, S, scale_log2, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    length = tl.load(len_ptr + bh // H).to(tl.int32)
    base = bh.to(tl.int64) * S * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < S,
                other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start_n in range(0, length, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < length
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale_log2
        s = tl.where(offs_n[None, :] < length, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)


def attention_key_padding(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor
                          ) -> torch.Tensor:
    b, h, s, d = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    block_m, block_n = (128, 64) if s >= 1024 else (64, 64)
    warps = 8 if d >= 128 and block_m >= 128 else 4
    grid = (triton.cdiv(s, block_m), b * h)
    key_padding_kernel[grid](q, k, v, lengths, out, h, s, 1.4426950408889634 / math.sqrt(d), HEAD_DIM=d,
                             BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=3)
    return out
