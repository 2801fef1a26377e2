"""Reference solution for fusion/linear-cross-entropy: classifier-head GEMM with an online logsumexp epilogue.

Kernel 1: a program owns BLOCK_M tokens and a run of TILES_PER_PROGRAM vocabulary tiles of BLOCK_V classes.
It computes each logits tile with tl.dot (float32 accumulation) and folds it into a running row max and
rescaled sum, picking out the target's logit when its column passes by; the (M, V) logits never reach
memory. Kernel 2 merges each row's partials and writes the loss.

Why this shape: the work is a GEMM (2 * M * K * V FLOPs) and runs at the speed of its main loop.
- 128 x 256 x 64 tiles over 8 warps: per k-step a program reads (128 + 256) * 64 operand elements for
  128 * 256 * 64 multiply-adds, half the L2 -> SM traffic per FLOP of 128 x 128 tiles, which at cuBLAS's
  rate would need more L2 bandwidth than the H200 has. The accumulator is 128 fp32 registers a thread.
- No masks when the tiles divide M, V and K (EVEN): the pipeliner issues plain 16-byte cp.async copies.
- Short runs of vocabulary tiles per program give thousands of equal programs (about 16 and 31 waves of
  132 SMs at the bench shapes), so the last wave is nearly full; a vocabulary split per SM-count would
  leave a third of the machine idle in its last wave.
- Programs are ordered in groups of GROUP_M token blocks (token block fastest), so the programs running
  at once share a few weight tiles and token blocks in L2: the weight is read from HBM about M / (GROUP_M *
  BLOCK_M) times and x once, instead of every token block missing L2 on every tile.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int, int, int, int, int]
"""(BLOCK_M, BLOCK_V, BLOCK_K, num_warps, num_stages, TILES_PER_PROGRAM, GROUP_M)."""
LARGE: Tiles = (128, 256, 64, 8, 3, 4, 8)
"""M * V >= 2048^2 (the bench shapes); scripts/triton_ref_sweep.py times the alternatives."""
SMALL: Tiles = (64, 64, 32, 4, 3, 4, 8)


@triton.jit
def lce_partial_kernel(x_ptr, w_ptr, target_ptr, pm_ptr, ps_ptr, pt_ptr, M, V, K, splits,
                       BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_K: tl.constexpr,
                       TILES_PER_PROGRAM: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    group = GROUP_M * splits
    first_m = (pid // group) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows_in_group
    split = (pid % group) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    target = tl.load(target_ptr + offs_m, mask=m_ok, other=-100)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    s_i = tl.zeros((BLOCK_M,), tl.float32)
    t_i = tl.zeros((BLOCK_M,), tl.float32)
    x_tile = x_ptr + offs_m[:, None].to(tl.int64) * K + offs_k[None, :]
    v_start = split * (TILES_PER_PROGRAM * BLOCK_V)
    v_end = tl.minimum(v_start + TILES_PER_PROGRAM * BLOCK_V, V)
    for v0 in range(v_start, v_end, BLOCK_V):
        offs_v = v0 + tl.arange(0, BLOCK_V)
        v_ok = offs_v < V
        w_tile = w_ptr + offs_v[:, None].to(tl.int64) * K + offs_k[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_V), tl.float32)
        for k in range(0, K, BLOCK_K):
            if EVEN:
                a = tl.load(x_tile + k)
                b = tl.load(w_tile + k)
            else:
                k_ok = offs_k < K - k
                a = tl.load(x_tile + k, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
                b = tl.load(w_tile + k, mask=v_ok[:, None] & k_ok[None, :], other=0.0)
            acc = tl.dot(a, tl.trans(b), acc)
        if not EVEN:
            acc = tl.where(v_ok[None, :], acc, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(acc, axis=1) * 1.4426950408889634)  # log2 domain
        tile_sum = tl.sum(tl.math.exp2(acc * 1.4426950408889634 - m_new[:, None]), axis=1)
        s_i = s_i * tl.math.exp2(m_i - m_new) + tile_sum
        m_i = m_new
        t_i += tl.sum(tl.where(offs_v[None, :] == target[:, None], acc, 0.0), axis=1)
    part = offs_m.to(tl.int64) * splits + split
    tl.store(pm_ptr + part, m_i, mask=m_ok)
    tl.store(ps_ptr + part, s_i, mask=m_ok)
    tl.store(pt_ptr + part, t_i, mask=m_ok)


@triton.jit
def lce_combine_kernel(pm_ptr, ps_ptr, pt_ptr, target_ptr, loss_ptr, M, splits, BLOCK_R: tl.constexpr,
                       BLOCK_S: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_s = tl.arange(0, BLOCK_S)
    r_ok = rows < M
    mask = r_ok[:, None] & (offs_s < splits)[None, :]
    at = rows[:, None].to(tl.int64) * splits + offs_s[None, :]
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
    bm, bv, bk, warps, stages, tiles_per_program, group_m = LARGE if m * v >= 2048 * 2048 else SMALL
    splits = triton.cdiv(v, tiles_per_program * bv)
    even = m % bm == 0 and v % bv == 0 and k % bk == 0
    part_m = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    part_s = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    part_t = torch.empty((m * splits,), dtype=torch.float32, device=x.device)
    lce_partial_kernel[(triton.cdiv(m, bm) * splits,)](
        x, weight, target, part_m, part_s, part_t, m, v, k, splits, BLOCK_M=bm, BLOCK_V=bv, BLOCK_K=bk,
        TILES_PER_PROGRAM=tiles_per_program, GROUP_M=group_m, EVEN=even, num_warps=warps, num_stages=stages)
    loss = torch.empty((m,), dtype=torch.float32, device=x.device)
    block_s = triton.next_power_of_2(splits)
    block_r = max(1, min(64, 8192 // block_s))
    lce_combine_kernel[(triton.cdiv(m, block_r),)](part_m, part_s, part_t, target, loss, m, splits,
                                                  BLOCK_R=block_r, BLOCK_S=block_s, num_warps=4)
    return loss
