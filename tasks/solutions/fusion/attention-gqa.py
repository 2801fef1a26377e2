"""Reference solution for fusion/attention-gqa: flash attention with query heads of a group packed together.

A program's BLOCK_M rows are HEADS query heads x BLOCK_Q positions that share one key/value head, so each
K and V tile is loaded once for all of them (the point of GQA); row r is head g0 + r // BLOCK_Q at position
start + r % BLOCK_Q. Causal programs stop at the last row's diagonal.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, HQ, HKV, S, scale_log2, GROUP: tl.constexpr, HEADS: tl.constexpr,
               HEAD_DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_q = tl.program_id(0) * BLOCK_Q
    pid = tl.program_id(1)
    chunks = tl.cdiv(GROUP, HEADS)
    g0 = (pid % chunks) * HEADS
    bkv = pid // chunks  # batch * HKV + kv head
    batch = bkv // HKV
    kv_head = bkv % HKV
    rows = tl.arange(0, HEADS * BLOCK_Q)
    g = g0 + rows // BLOCK_Q
    pos = start_q + rows % BLOCK_Q
    row_ok = (g < GROUP) & (pos < S)
    head = kv_head * GROUP + g
    q_rows = ((batch * HQ + head).to(tl.int64) * S + pos) * HEAD_DIM
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + q_rows[:, None] + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    kv_base = bkv.to(tl.int64) * S * HEAD_DIM
    m_i = tl.full((HEADS * BLOCK_Q,), -float("inf"), tl.float32)
    l_i = tl.zeros((HEADS * BLOCK_Q,), tl.float32)
    acc = tl.zeros((HEADS * BLOCK_Q, HEAD_DIM), tl.float32)
    end_n = tl.minimum(S, start_q + BLOCK_Q) if CAUSAL else S
    for start_n in range(0, end_n, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < S
        k = tl.load(k_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale_log2
        keep = offs_n[None, :] < S
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= pos[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] + offs_d[None, :], out.to(o_ptr.dtype.element_ty), mask=row_ok[:, None])


def attention_gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    b, hq, s, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    block_m, block_n = (128, 64) if s >= 1024 else (64, 64)
    heads = min(triton.next_power_of_2(group), 2)
    block_q = block_m // heads
    warps = 8 if d >= 128 and block_m >= 128 else 4
    grid = (triton.cdiv(s, block_q), b * hkv * triton.cdiv(group, heads))
    gqa_kernel[grid](q, k, v, out, hq, hkv, s, 1.4426950408889634 / math.sqrt(d), GROUP=group, HEADS=heads,
                     HEAD_DIM=d, BLOCK_Q=block_q, BLOCK_N=block_n, CAUSAL=causal, num_warps=warps,
                     num_stages=3)
    return out
