"""Reference solution for fusion/cross-attention: flash attention with separate query and key lengths.

Each program owns BLOCK_M queries of one (batch, head) and streams the Sk keys and values in blocks of BLOCK_N
with an online softmax, so nothing of size Sq x Sk reaches memory. At bench sizes a program is two
warpgroups (BLOCK_M = 128, 8 warps) and both products lower to wgmma; the output accumulates in the P @ V
dot itself (fp32), rescaled once per block, and the softmax runs in base 2 with scale * log2(e) folded into
one multiply-add per score. Whole key blocks run without masks; the ragged rest (Sk mod BLOCK_N keys) is
one masked block of TAIL_N = the next power of two (at least 16) rather than a full BLOCK_N, which matters
for text conditioning (Sk = 77: 64 + 16 keys computed instead of 128; with D = 64 that case moves 2 * Sq * D
bytes per head and its exponentials and products cost about as much as the traffic).

KV_LOADS selects two Hopper options for the GPU sweep; the default is the pointer path above. TMA reads K and
V through (heads, Sk, D) tensor descriptors (a second pair with TAIL_N rows for the ragged block): one
thread issues each tile's copy, the address arithmetic leaves the registers and rows past Sk arrive as
zeros, so no block needs a load mask. WARP_SPECIALIZE lets the compiler split the key loop into a TMA
producer warpgroup and two consumer warpgroups of BLOCK_M / 2 rows (12 warps, registers 40 / 232 by
setmaxnreg), so one consumer's softmax overlaps the other's wgmma. The compiler partitions only a kernel
with a single loop whose loads are all TMA, at num_warps = 4: Q comes through an in-kernel descriptor (its
global scratch from triton.set_allocator) and a ragged key range runs as one loop of BLOCK_N blocks, all
masked.
"""

import functools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

Tiles = tuple[int, int, int, int]
"""(BLOCK_M, BLOCK_N, num_warps, num_stages)."""
LARGE: Tiles = (128, 64, 8, 3)
"""Sq >= 1024 and Sk >= 1024; scripts/triton_ref_sweep.py times the alternatives."""
SHORT_KEYS: Tiles = (64, 64, 4, 2)
"""Sq >= 1024 and Sk < 1024 (a few key blocks: the query reads and output writes dominate)."""
SMALL: Tiles = (64, 64, 4, 3)
KV_LOADS: Tiles = (0, 0)
"""(TMA, WARP_SPECIALIZE), each 0 or 1. WARP_SPECIALIZE needs TMA and tiles of 4 warps and BLOCK_M = 128, e.g.
(128, 64, 4, 2): at BLOCK_M = 64 both consumer warpgroups compute the same rows, twice the work."""
LOG2_E = 1.4426950408889634


@triton.jit
def load_rows(src, head, start_n, seq_k, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
              TMA: tl.constexpr):
    """Rows [start_n, start_n + BLOCK_N) of one head of K or V: from a (heads, Sk, D) descriptor (rows past Sk
    are zeros), or through the head's pointer tile, masked on MASKED blocks."""
    if TMA:
        return src.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    elif MASKED:
        rows = start_n + tl.arange(0, BLOCK_N)
        return tl.load(src + start_n * HEAD_DIM, mask=rows[:, None] < seq_k, other=0.0)
    else:
        return tl.load(src + start_n * HEAD_DIM)


@triton.jit
def attend_blocks(acc, l_i, m_i, q, k_src, v_src, head, lo, hi, seq_k, qk_scale, HEAD_DIM: tl.constexpr,
                  BLOCK_N: tl.constexpr, MASKED: tl.constexpr, TMA: tl.constexpr,
                  WARP_SPECIALIZE: tl.constexpr):
    """Fold keys [lo, hi) into the running (acc, l_i, m_i); MASKED blocks drop keys past seq_k. k_src and
    v_src are descriptors when TMA, else pointers to the head's first key and value."""
    offs_n = tl.arange(0, BLOCK_N)
    if not TMA:
        k_src = k_src + offs_n[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
        v_src = v_src + offs_n[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = load_rows(k_src, head, start_n, seq_k, BLOCK_N, HEAD_DIM, MASKED, TMA)
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            s = tl.where(start_n + offs_n[None, :] < seq_k, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = load_rows(v_src, head, start_n, seq_k, BLOCK_N, HEAD_DIM, MASKED, TMA)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def cross_attention_kernel(q_ptr, k_src, v_src, k_tail, v_tail, o_ptr, seq_q, seq_k, qk_scale,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           TAIL_N: tl.constexpr, EVEN_M: tl.constexpr, TMA: tl.constexpr,
                           WARP_SPECIALIZE: tl.constexpr):
    """Program (i, bh): query block i of head bh; TAIL_N = 0 when BLOCK_N divides seq_k. K and V are
    (k_src, v_src) in BLOCK_N-row blocks and (k_tail, v_tail) in the TAIL_N-row last block: descriptors when
    TMA, else all four are the tensors' pointers."""
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1)
    bh = head.to(tl.int64)
    q_base = bh * seq_q * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    if WARP_SPECIALIZE:
        q_desc = tl.make_tensor_descriptor(q_ptr, shape=[tl.num_programs(1), seq_q, HEAD_DIM],
                                           strides=[seq_q * HEAD_DIM, HEAD_DIM, 1],
                                           block_shape=[1, BLOCK_M, HEAD_DIM])
        q = q_desc.load([head, start_m, 0]).reshape(BLOCK_M, HEAD_DIM)
    elif EVEN_M:
        q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    else:
        q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=offs_m[:, None] < seq_q, other=0.0)
    if TMA:
        k_rows, v_rows, k_last, v_last = k_src, v_src, k_tail, v_tail
    else:
        kv_base = bh * seq_k * HEAD_DIM
        k_rows, v_rows, k_last, v_last = k_src + kv_base, v_src + kv_base, k_tail + kv_base, v_tail + kv_base
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if WARP_SPECIALIZE:
        # one loop over every key, masked on every block when seq_k is ragged
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, head, 0, seq_k, seq_k, qk_scale,
                                      HEAD_DIM, BLOCK_N, TAIL_N > 0, TMA, True)
    else:
        whole = (seq_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, head, 0, whole, seq_k, qk_scale,
                                      HEAD_DIM, BLOCK_N, False, TMA, False)
        if TAIL_N > 0:
            acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_last, v_last, head, whole, seq_k, seq_k,
                                          qk_scale, HEAD_DIM, TAIL_N, True, TMA, False)
    out = (acc / l_i[:, None]).to(o_ptr.dtype.element_ty)
    o_ptrs = o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        tl.store(o_ptrs, out)
    else:
        tl.store(o_ptrs, out, mask=offs_m[:, None] < seq_q)


def kv_source(kv: torch.Tensor, seq_k: int, block_n: int, tma: bool) -> torch.Tensor | TensorDescriptor:
    """K or V as the kernel reads it: the tensor, or a TMA descriptor over its (heads, Sk, D) view."""
    if not tma:
        return kv
    head_dim = kv.shape[-1]
    return TensorDescriptor(kv, [kv.numel() // (seq_k * head_dim), seq_k, head_dim],
                            [seq_k * head_dim, head_dim, 1], [1, block_n, head_dim])


def scratch(size: int, alignment: int, stream: int | None, device: torch.device) -> torch.Tensor:
    """Global memory for the in-kernel Q descriptor of the warp-specialised path (128 bytes a program)."""
    return torch.empty(size, dtype=torch.int8, device=device)


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
    tma, warp_specialize = KV_LOADS
    if warp_specialize:
        triton.set_allocator(functools.partial(scratch, device=q.device))
    k_src, v_src = (kv_source(t, seq_k, block_n, tma == 1) for t in (k, v))
    k_tail, v_tail = (kv_source(t, seq_k, tail_n, tma == 1) for t in (k, v)) if tail_n else (k_src, v_src)
    grid = (triton.cdiv(seq_q, block_m), batch * heads)
    cross_attention_kernel[grid](q, k_src, v_src, k_tail, v_tail, out, seq_q, seq_k, LOG2_E / head_dim ** 0.5,
                                 HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, TAIL_N=tail_n,
                                 EVEN_M=seq_q % block_m == 0, TMA=tma == 1,
                                 WARP_SPECIALIZE=warp_specialize == 1, num_warps=warps, num_stages=stages)
    return out
