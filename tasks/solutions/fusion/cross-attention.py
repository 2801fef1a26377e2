"""Reference solution for fusion/cross-attention: flash attention with separate query and key lengths.

Each program owns BLOCK_M queries of one (batch, head) and streams the Sk keys and values in blocks of BLOCK_N
with an online softmax, so nothing of size Sq x Sk reaches memory. At bench sizes a program is two
warpgroups (BLOCK_M = 128, 8 warps) and both products lower to wgmma; the output accumulates in the P @ V
dot itself (fp32), rescaled once per block, and the softmax runs in base 2 with scale * log2(e) folded into
one multiply-add per score. Whole key blocks run without masks; the ragged rest (Sk mod BLOCK_N keys) is
one masked block of TAIL_N = the next power of two (at least 16) rather than a full BLOCK_N, which matters
for text conditioning (Sk = 77: 64 + 16 keys computed instead of 128; with D = 64 that case moves 2 * Sq * D
bytes per head and its exponentials and products cost about as much as the traffic).
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int]
"""(BLOCK_M, BLOCK_N, num_warps, num_stages)."""
LARGE: Tiles = (128, 64, 8, 3)
"""Sq >= 1024 and Sk >= 1024; scripts/triton_ref_sweep.py times the alternatives."""
SHORT_KEYS: Tiles = (64, 64, 4, 2)
"""Sq >= 1024 and Sk < 1024 (a few key blocks: the query reads and output writes dominate)."""
SMALL: Tiles = (64, 64, 4, 3)
LOG2_E = 1.4426950408889634


@triton.jit
def attend_blocks(acc, l_i, m_i, q, k_base, v_base, lo, hi, seq_k, qk_scale, HEAD_DIM: tl.constexpr,
                  BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Fold keys [lo, hi) into the running (acc, l_i, m_i); MASKED blocks drop keys past seq_k."""
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k_ptrs = k_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    v_ptrs = v_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs + start_n * HEAD_DIM, mask=keys[:, None] < seq_k, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * HEAD_DIM)
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            s = tl.where(keys[None, :] < seq_k, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if MASKED:
            v = tl.load(v_ptrs + start_n * HEAD_DIM, mask=keys[:, None] < seq_k, other=0.0)
        else:
            v = tl.load(v_ptrs + start_n * HEAD_DIM)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def cross_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_q, seq_k, qk_scale, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr,
                           EVEN_M: tl.constexpr):
    """Program (i, bh): query block i of head bh; TAIL_N = 0 when BLOCK_N divides seq_k."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    q_base = bh * seq_q * HEAD_DIM
    k_base = k_ptr + bh * seq_k * HEAD_DIM
    v_base = v_ptr + bh * seq_k * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        q = tl.load(q_ptrs)
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    whole = (seq_k // BLOCK_N) * BLOCK_N
    acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_base, v_base, 0, whole, seq_k, qk_scale, HEAD_DIM,
                                  BLOCK_N, False)
    if TAIL_N > 0:
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_base, v_base, whole, seq_k, seq_k, qk_scale,
                                      HEAD_DIM, TAIL_N, True)
    out = (acc / l_i[:, None]).to(o_ptr.dtype.element_ty)
    o_ptrs = o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        tl.store(o_ptrs, out)
    else:
        tl.store(o_ptrs, out, mask=offs_m[:, None] < seq_q)


def cross_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    batch, heads, seq_q, head_dim = q.shape
    seq_k = k.shape[2]
    out = torch.empty_like(q)
    if seq_q >= 1024:
        block_m, block_n, warps, stages = LARGE if seq_k >= 1024 else SHORT_KEYS
    else:
        block_m, block_n, warps, stages = SMALL
    rest = seq_k % block_n
    tail_n = max(16, triton.next_power_of_2(rest)) if rest else 0
    grid = (triton.cdiv(seq_q, block_m), batch * heads)
    cross_attention_kernel[grid](q, k, v, out, seq_q, seq_k, LOG2_E / head_dim ** 0.5, HEAD_DIM=head_dim,
                                 BLOCK_M=block_m, BLOCK_N=block_n, TAIL_N=tail_n, EVEN_M=seq_q % block_m == 0,
                                 num_warps=warps, num_stages=stages)
    return out
