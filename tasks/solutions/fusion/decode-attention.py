"""Reference solution for fusion/decode-attention: split-KV (flash-decoding) GQA over a contiguous cache.

Kernel 1 runs one program per (batch, kv head, key split): the GROUP query heads that share the kv head
are packed as rows of one tile (padded to 16 for tl.dot), so each cache tile is loaded once for the whole
group; the program keeps an online softmax over its slice of [0, cache_lens[b]) and writes its partial
output, running max and sum in float32. Kernel 2 merges the splits of each (batch, head) with the usual
rescaling. Splits keep every SM busy when B * Hkv is small; the cache is read once.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def decode_split_kernel(q_ptr, k_ptr, v_ptr, len_ptr, po_ptr, pm_ptr, pl_ptr, H, HKV, S, chunk, scale_log2,
                        GROUP: tl.constexpr, BLOCK_G: tl.constexpr, HEAD_DIM: tl.constexpr,
                        BLOCK_N: tl.constexpr, SPLITS: tl.constexpr):
    bkv = tl.program_id(0)
    split = tl.program_id(1)
    batch = bkv // HKV
    length = tl.load(len_ptr + batch)
    start = split * chunk
    end = tl.minimum(start + chunk, length)
    g = tl.arange(0, BLOCK_G)
    g_ok = g < GROUP
    heads = (bkv % HKV) * GROUP + g
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (batch * H + heads)[:, None].to(tl.int64) * HEAD_DIM + offs_d[None, :],
                mask=g_ok[:, None], other=0.0)
    kv_base = bkv.to(tl.int64) * S * HEAD_DIM
    m_i = tl.full((BLOCK_G,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, HEAD_DIM), tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < end
        k = tl.load(k_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale_log2
        s = tl.where(offs_n[None, :] < end, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    part = (batch * H + heads).to(tl.int64) * SPLITS + split
    tl.store(po_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=g_ok[:, None])
    tl.store(pm_ptr + part, m_i, mask=g_ok)
    tl.store(pl_ptr + part, l_i, mask=g_ok)


@triton.jit
def decode_combine_kernel(po_ptr, pm_ptr, pl_ptr, o_ptr, HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr,
                          BLOCK_S: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    s_ok = offs_s < SPLITS
    m = tl.load(pm_ptr + bh * SPLITS + offs_s, mask=s_ok, other=-float("inf"))
    l_part = tl.load(pl_ptr + bh * SPLITS + offs_s, mask=s_ok, other=0.0)
    m_max = tl.max(m, axis=0)
    w = tl.where(m == -float("inf"), 0.0, tl.math.exp2(m - m_max))
    offs_d = tl.arange(0, HEAD_DIM)
    parts = tl.load(po_ptr + (bh * SPLITS + offs_s)[:, None] * HEAD_DIM + offs_d[None, :], mask=s_ok[:, None],
                    other=0.0)
    out = tl.sum(parts * w[:, None], axis=0) / tl.sum(l_part * w, axis=0)
    tl.store(o_ptr + bh * HEAD_DIM + offs_d, out.to(o_ptr.dtype.element_ty))


def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_lens: torch.Tensor
                     ) -> torch.Tensor:
    b, h, d = q.shape
    hkv, s_max = k_cache.shape[1], k_cache.shape[2]
    group = h // hkv
    block_n = 64
    splits = max(1, min(triton.cdiv(s_max, 4 * block_n), triton.cdiv(264, b * hkv)))
    chunk = triton.cdiv(triton.cdiv(s_max, splits), block_n) * block_n
    part_o = torch.empty((b * h * splits, d), dtype=torch.float32, device=q.device)
    part_m = torch.empty((b * h * splits,), dtype=torch.float32, device=q.device)
    part_l = torch.empty((b * h * splits,), dtype=torch.float32, device=q.device)
    decode_split_kernel[(b * hkv, splits)](
        q.contiguous(), k_cache.contiguous(), v_cache.contiguous(), cache_lens, part_o, part_m, part_l,
        h, hkv, s_max, chunk, 1.4426950408889634 / math.sqrt(d), GROUP=group,
        BLOCK_G=max(16, triton.next_power_of_2(group)), HEAD_DIM=d, BLOCK_N=block_n, SPLITS=splits,
        num_warps=4, num_stages=3)
    out = torch.empty_like(q)
    decode_combine_kernel[(b * h,)](part_o, part_m, part_l, out, HEAD_DIM=d, SPLITS=splits,
                                    BLOCK_S=triton.next_power_of_2(splits), num_warps=4)
    return out
