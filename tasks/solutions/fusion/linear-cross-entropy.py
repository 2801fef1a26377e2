"""Reference solution for fusion/linear-cross-entropy: classifier-head GEMM with an online logsumexp epilogue.

Kernel 1: a program owns BLOCK_M tokens and one of SPLITS slices of the vocabulary. It computes the logits
tile by tile with tl.dot (float32 accumulation; wgmma-sized 128x128x64 tiles at bench sizes) and folds each
tile into a running row max and rescaled sum, picking out the target's logit when its column passes by.
The (M, V) logits never reach memory. Kernel 2 merges the slices of each row and writes the loss.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def lce_partial_kernel(x_ptr, w_ptr, target_ptr, pm_ptr, ps_ptr, pt_ptr, M, V, K, cols_per_split,
                       SPLITS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    target = tl.load(target_ptr + offs_m, mask=m_ok, other=-100)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    s_i = tl.zeros((BLOCK_M,), tl.float32)
    t_i = tl.zeros((BLOCK_M,), tl.float32)
    v_start = split * cols_per_split
    v_end = tl.minimum(v_start + cols_per_split, V)
    for v0 in range(v_start, v_end, BLOCK_V):
        offs_v = v0 + tl.arange(0, BLOCK_V)
        v_ok = offs_v < v_end
        x_offs = offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
        w_offs = offs_v[None, :].to(tl.int64) * K + offs_k[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_V), tl.float32)
        for k in range(0, K, BLOCK_K):
            k_ok = offs_k < K - k
            a = tl.load(x_ptr + x_offs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(w_ptr + w_offs, mask=k_ok[:, None] & v_ok[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
            x_offs += BLOCK_K
            w_offs += BLOCK_K
        logits = tl.where(v_ok[None, :], acc * 1.4426950408889634, -float("inf"))  # log2 domain
        m_new = tl.maximum(m_i, tl.max(logits, axis=1))
        s_i = s_i * tl.math.exp2(m_i - m_new) + tl.sum(tl.math.exp2(logits - m_new[:, None]), axis=1)
        m_i = m_new
        t_i += tl.sum(tl.where(offs_v[None, :] == target[:, None], acc, 0.0), axis=1)
    part = offs_m.to(tl.int64) * SPLITS + split
    tl.store(pm_ptr + part, m_i, mask=m_ok)
    tl.store(ps_ptr + part, s_i, mask=m_ok)
    tl.store(pt_ptr + part, t_i, mask=m_ok)


@triton.jit
def lce_combine_kernel(pm_ptr, ps_ptr, pt_ptr, target_ptr, loss_ptr, M, SPLITS: tl.constexpr,
                       BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_s = tl.arange(0, BLOCK_S)
    r_ok = rows < M
    mask = r_ok[:, None] & (offs_s < SPLITS)[None, :]
    at = rows[:, None].to(tl.int64) * SPLITS + offs_s[None, :]
    m = tl.load(pm_ptr + at, mask=mask, other=-float("inf"))
    s = tl.load(ps_ptr + at, mask=mask, other=0.0)
    t = tl.load(pt_ptr + at, mask=mask, other=0.0)
    m_row = tl.max(m, axis=1)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.math.exp2(m - m_row[:, None])), axis=1)
    lse = (m_row + tl.log2(total)) * 0.6931471805599453
    target = tl.load(target_ptr + rows, mask=r_ok, other=-100)
    tl.store(loss_ptr + rows, tl.where(target != -100, lse - tl.sum(t, axis=1), 0.0), mask=r_ok)


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    v = weight.shape[0]
    x, weight = x.contiguous(), weight.contiguous()
    if m * v >= 2048 * 2048:
        bm, bv, bk, warps = 128, 128, 64, 8
    else:
        bm, bv, bk, warps = 64, 64, 32, 4
    tiles_m = triton.cdiv(m, bm)
    splits = max(1, min(triton.cdiv(264, tiles_m), triton.cdiv(v, 4 * bv)))
    cols = triton.cdiv(triton.cdiv(v, splits), bv) * bv
    splits = triton.cdiv(v, cols)
    part_m = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    part_s = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    part_t = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    lce_partial_kernel[(tiles_m, splits)](x, weight, target, part_m, part_s, part_t, m, v, k, cols,
                                          SPLITS=splits, BLOCK_M=bm, BLOCK_V=bv, BLOCK_K=bk, num_warps=warps,
                                          num_stages=3)
    loss = torch.empty((m,), dtype=torch.float32, device=x.device)
    lce_combine_kernel[(triton.cdiv(m, 64),)](part_m, part_s, part_t, target, loss, m, SPLITS=splits,
                                             BLOCK_R=64, BLOCK_S=triton.next_power_of_2(splits), num_warps=4)
    return loss
