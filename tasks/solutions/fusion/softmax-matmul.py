"""Reference solution for fusion/softmax-matmul: online softmax over score tiles fed straight into P @ V.

Each program owns BLOCK_M rows of one (batch, head): it streams (BLOCK_M, BLOCK_N) score tiles with a
running max and sum (flash attention without the QK^T product) and multiplies the unnormalised
probabilities, rounded to the input dtype, with the matching V tile. The probabilities never reach memory;
the scores are read exactly once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_matmul_kernel(s_ptr, v_ptr, o_ptr, SQ, SK, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    s_rows = s_ptr + bh * SQ * SK + offs_m[:, None].to(tl.int64) * SK
    v_base = bh * SK * HEAD_DIM
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for start_n in range(0, SK, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        s = tl.load(s_rows + offs_n[None, :], mask=(offs_m[:, None] < SQ) & (offs_n[None, :] < SK),
                    other=-float("inf")).to(tl.float32) * 1.4426950408889634
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + v_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_n[:, None] < SK,
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + bh * SQ * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
             out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < SQ)


def softmax_matmul(scores: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, h, sq, sk = scores.shape
    d = v.shape[-1]
    scores, v = scores.contiguous(), v.contiguous()
    out = torch.empty((b, h, sq, d), dtype=v.dtype, device=v.device)
    block_m, block_n = (128, 64) if sq >= 1024 else (64, 64)
    warps = 8 if block_m >= 128 else 4
    grid = (triton.cdiv(sq, block_m), b * h)
    softmax_matmul_kernel[grid](scores, v, out, sq, sk, HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n,
                                num_warps=warps, num_stages=3)
    return out
