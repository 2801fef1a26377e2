"""Reference solution for fusion/depthwise-pointwise-conv1d: a depthwise pass, then the pointwise GEMM on
tensor cores.

The pointwise conv is a batched GEMM, out[b] (Cout x L) = pw (Cout x C) @ dw_out[b] (C x L), and it holds
nearly all the FLOPs (2 * B * L * C * Cout against B * L * C * 2 * Kw for the depthwise part). Computing the
depthwise tile inside the GEMM's K loop costs more than it saves: every Cout tile recomputes it, its Kw
shifted loads of x are never 16-byte aligned (scalar loads the pipeliner cannot turn into asynchronous
copies), and the tile must go through registers to shared memory before each wgmma. So a memory-bound kernel
writes the depthwise output (float32 sum plus bias, rounded to the input dtype, as the eager chain does)
and a plain pipelined GEMM reads it: the round trip costs one extra write and read of a (B, C, L) tensor,
about a quarter of the GEMM's time at the bench shapes, while the GEMM's A and B tiles become unmasked
16-byte asynchronous copies feeding wgmma. The GEMM's Cout tiles of one (batch, L tile) are adjacent in
launch order, so the depthwise strip they share is read from memory once.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, ...]
"""The pointwise GEMM's (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); the depthwise pass's blocks
and num_warps."""
LARGE: Tiles = (128, 256, 64, 8, 4)
"""Cout * L * B >= 2048^2; scripts/triton_ref_sweep.py times the alternatives."""
SMALL: Tiles = (64, 64, 32, 4, 3)
DEPTHWISE: Tiles = (16, 256, 4)
"""(BLOCK_C, BLOCK_L, num_warps) of the depthwise pass."""


@triton.jit
def depthwise_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, L, KW: tl.constexpr, BLOCK_C: tl.constexpr,
                     BLOCK_L: tl.constexpr):
    offs_l = tl.program_id(0) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = offs_c < C
    rows = (tl.program_id(2).to(tl.int64) * C + offs_c) * L
    acc = tl.zeros((BLOCK_C, BLOCK_L), tl.float32)
    acc += tl.load(b_ptr + offs_c, mask=c_ok, other=0.0).to(tl.float32)[:, None]
    for j in tl.static_range(KW):
        src = offs_l + (j - KW // 2)
        src_ok = (src >= 0) & (src < L)
        xv = tl.load(x_ptr + rows[:, None] + src[None, :], mask=c_ok[:, None] & src_ok[None, :], other=0.0)
        wj = tl.load(w_ptr + offs_c * KW + j, mask=c_ok, other=0.0).to(tl.float32)
        acc += xv.to(tl.float32) * wj[:, None]
    tl.store(y_ptr + rows[:, None] + offs_l[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=c_ok[:, None] & (offs_l < L)[None, :])


@triton.jit
def pointwise_kernel(w_ptr, y_ptr, b_ptr, out_ptr, C, COUT, L, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(COUT, BLOCK_M)
    offs_m = (pid % tiles_m) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid // tiles_m) * BLOCK_N + tl.arange(0, BLOCK_N)
    batch = tl.program_id(1).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < COUT
    n_ok = offs_n < L
    a_tile = w_ptr + offs_m[:, None] * C + offs_k[None, :]
    b_tile = y_ptr + batch * C * L + offs_k[:, None].to(tl.int64) * L + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in range(0, C, BLOCK_K):
        if EVEN:
            a = tl.load(a_tile)
            b = tl.load(b_tile)
        else:
            k_ok = offs_k < C - k
            a = tl.load(a_tile, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(b_tile, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K
        b_tile += BLOCK_K * L
    acc += tl.load(b_ptr + offs_m, mask=m_ok, other=0.0).to(tl.float32)[:, None]
    out = out_ptr + (batch * COUT + offs_m[:, None]) * L + offs_n[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def depthwise_pointwise_conv1d(x: torch.Tensor, dw_weight: torch.Tensor, dw_bias: torch.Tensor,
                               pw_weight: torch.Tensor, pw_bias: torch.Tensor) -> torch.Tensor:
    b, c, length = x.shape
    cout = pw_weight.shape[0]
    kw = dw_weight.shape[-1]
    hidden = torch.empty_like(x)
    block_c, block_l, dw_warps = DEPTHWISE
    depthwise_kernel[(triton.cdiv(length, block_l), triton.cdiv(c, block_c), b)](
        x, dw_weight, dw_bias, hidden, c, length, KW=kw, BLOCK_C=block_c, BLOCK_L=block_l, num_warps=dw_warps)
    out = torch.empty((b, cout, length), dtype=x.dtype, device=x.device)
    bm, bn, bk, warps, stages = LARGE if b * cout * length >= 2048 * 2048 else SMALL
    even = cout % bm == 0 and length % bn == 0 and c % bk == 0
    grid = (triton.cdiv(cout, bm) * triton.cdiv(length, bn), b)
    pointwise_kernel[grid](pw_weight, hidden, pw_bias, out, c, cout, length, BLOCK_M=bm, BLOCK_N=bn,
                           BLOCK_K=bk, EVEN=even, num_warps=warps, num_stages=stages)
    return out
