"""Reference solution for fusion/attention: a flash-attention forward pass.

Each program owns BLOCK_M queries of one (batch, head) and streams keys and values in blocks of BLOCK_N,
keeping a running max and sum so the S x S scores never leave registers. At bench sizes a program is two
warpgroups (BLOCK_M = 128, 8 warps) and both products lower to wgmma; the output accumulates in the P @ V
dot itself (fp32), rescaled once per block. The softmax runs in base 2 with scale * log2(e) folded into
one multiply-add per score. Masks cost registers and ALU work, so the key loop is split: blocks wholly
inside the sequence and below the diagonal run unmasked, and only the diagonal block (causal) or the
ragged last block (S not a multiple of BLOCK_N) is masked. Causal programs are launched longest first
(query blocks in reverse) so the short ones fill the tail of the grid; query blocks of one head stay
adjacent in launch order, so the programs sharing a head's K and V run together and hit L2.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int]
"""(BLOCK_M, BLOCK_N, num_warps, num_stages)."""
LARGE: Tiles = (128, 64, 8, 3)
"""S >= 1024 (the bench shapes); BLOCK_M must be a multiple of BLOCK_N (the causal diagonal is whole
blocks). 224 KB of shared memory at 3 stages; scripts/triton_ref_sweep.py times the alternatives."""
SMALL: Tiles = (64, 64, 4, 3)
LOG2_E = 1.4426950408889634


@triton.jit
def attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, lo, hi, seq_k, qk_scale, HEAD_DIM: tl.constexpr,
                  BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """Fold keys [lo, hi) into the running (acc, l_i, m_i); MASKED blocks drop keys past seq_k and, when
    CAUSAL, keys after the query."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs + start_n * HEAD_DIM, mask=keys[:, None] < seq_k, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * HEAD_DIM)
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            keep = keys[None, :] < seq_k
            if CAUSAL:
                keep = keep & (keys[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, -float("inf"))
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
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_q, seq_k, qk_scale, GROUP: tl.constexpr,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr):
    """Program (i, bh): query block i of query head bh = b * H + h, whose keys and values are kv head
    bh // GROUP (GROUP query heads share one kv head)."""
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    start_m = pid_m * BLOCK_M
    q_base = bh.to(tl.int64) * seq_q * HEAD_DIM
    kv_base = (bh // GROUP).to(tl.int64) * seq_k * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        q = tl.load(q_ptrs)
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)
    k_ptrs = k_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    v_ptrs = v_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        # keys below start_m are visible to every row and inside the sequence; the diagonal block is masked
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, 0, start_m, seq_k, qk_scale,
                                      HEAD_DIM, BLOCK_N, False, True)
        diagonal_end = tl.minimum(start_m + BLOCK_M, seq_k)
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, start_m, diagonal_end, seq_k,
                                      qk_scale, HEAD_DIM, BLOCK_N, True, True)
    else:
        whole = seq_k if EVEN_N else (seq_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, 0, whole, seq_k, qk_scale,
                                      HEAD_DIM, BLOCK_N, False, False)
        if not EVEN_N:
            acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, whole, seq_k, seq_k,
                                          qk_scale, HEAD_DIM, BLOCK_N, True, False)
    out = (acc / l_i[:, None]).to(o_ptr.dtype.element_ty)
    o_ptrs = o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        tl.store(o_ptrs, out)
    else:
        tl.store(o_ptrs, out, mask=offs_m[:, None] < seq_q)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    block_m, block_n, warps, stages = LARGE if seq_len >= 1024 else SMALL
    grid = (triton.cdiv(seq_len, block_m), batch * heads)
    attention_kernel[grid](q, k, v, out, seq_len, seq_len, LOG2_E / head_dim ** 0.5, GROUP=1,
                           HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                           EVEN_M=seq_len % block_m == 0, EVEN_N=seq_len % block_n == 0, num_warps=warps,
                           num_stages=stages)
    return out
