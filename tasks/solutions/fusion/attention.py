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

KV_LOADS selects two Hopper options for the GPU sweep; the default is the pointer path above. TMA reads K and
V through (kv heads, S, D) tensor descriptors: one thread issues each tile's copy, the address arithmetic
leaves the registers (152 -> 140 at the bench shapes) and rows past S arrive as zeros, so no block needs a
load mask. WARP_SPECIALIZE lets the compiler split the key loop into a TMA producer warpgroup and two consumer
warpgroups of BLOCK_M / 2 rows (12 warps, registers 40 / 232 by setmaxnreg), so one consumer's softmax
overlaps the other's wgmma. The compiler partitions only a kernel with a single loop whose loads are all TMA,
at num_warps = 4: Q comes through an in-kernel descriptor (its global scratch from triton.set_allocator) and
a causal or ragged key range runs as one loop masked on every block.
"""

import functools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

Tiles = tuple[int, int, int, int]
"""(BLOCK_M, BLOCK_N, num_warps, num_stages)."""
LARGE: Tiles = (128, 64, 8, 3)
"""S >= 1024 (the bench shapes); BLOCK_M must be a multiple of BLOCK_N (the causal diagonal is whole
blocks). 224 KB of shared memory at 3 stages; scripts/triton_ref_sweep.py times the alternatives."""
SMALL: Tiles = (64, 64, 4, 3)
KV_LOADS: Tiles = (0, 0)
"""(TMA, WARP_SPECIALIZE), each 0 or 1. WARP_SPECIALIZE needs TMA and tiles of 4 warps and BLOCK_M = 128, e.g.
(128, 64, 4, 2): at BLOCK_M = 64 both consumer warpgroups compute the same rows, twice the work."""
LOG2_E = 1.4426950408889634


@triton.jit
def load_rows(src, head, start_n, seq_k, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
              TMA: tl.constexpr):
    """Rows [start_n, start_n + BLOCK_N) of one head of K or V: from a (heads, S, D) descriptor (rows past S
    are zeros), or through the head's pointer tile, masked on MASKED blocks."""
    if TMA:
        return src.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    elif MASKED:
        rows = start_n + tl.arange(0, BLOCK_N)
        return tl.load(src + start_n * HEAD_DIM, mask=rows[:, None] < seq_k, other=0.0)
    else:
        return tl.load(src + start_n * HEAD_DIM)


@triton.jit
def attend_blocks(acc, l_i, m_i, q, k_src, v_src, kv_head, offs_m, lo, hi, seq_k, qk_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                  TMA: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """Fold keys [lo, hi) into the running (acc, l_i, m_i); MASKED blocks drop keys past seq_k and, when
    CAUSAL, keys after the query."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = load_rows(k_src, kv_head, start_n, seq_k, BLOCK_N, HEAD_DIM, MASKED, TMA)
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            keys = start_n + offs_n
            keep = keys[None, :] < seq_k
            if CAUSAL:
                keep = keep & (keys[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = load_rows(v_src, kv_head, start_n, seq_k, BLOCK_N, HEAD_DIM, MASKED, TMA)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_kernel(q_ptr, k_src, v_src, o_ptr, seq_q, seq_k, qk_scale, GROUP: tl.constexpr,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, TMA: tl.constexpr,
                     WARP_SPECIALIZE: tl.constexpr):
    """Program (i, bh): query block i of query head bh = b * H + h, whose keys and values are kv head
    bh // GROUP (GROUP query heads share one kv head). k_src and v_src are descriptors when TMA, else
    pointers."""
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    start_m = pid_m * BLOCK_M
    q_base = bh.to(tl.int64) * seq_q * HEAD_DIM
    kv_head = bh // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    if WARP_SPECIALIZE:
        q_desc = tl.make_tensor_descriptor(q_ptr, shape=[tl.num_programs(1), seq_q, HEAD_DIM],
                                           strides=[seq_q * HEAD_DIM, HEAD_DIM, 1],
                                           block_shape=[1, BLOCK_M, HEAD_DIM])
        q = q_desc.load([bh, start_m, 0]).reshape(BLOCK_M, HEAD_DIM)
    elif EVEN_M:
        q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    else:
        q = tl.load(q_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=offs_m[:, None] < seq_q, other=0.0)
    if TMA:
        k_rows = k_src
        v_rows = v_src
    else:
        kv_base = kv_head.to(tl.int64) * seq_k * HEAD_DIM
        k_rows = k_src + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        v_rows = v_src + kv_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if WARP_SPECIALIZE:
        # one loop over every visible key, masked on every block when causal or ragged
        hi = tl.minimum(start_m + BLOCK_M, seq_k) if CAUSAL else seq_k
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, kv_head, offs_m, 0, hi, seq_k,
                                      qk_scale, HEAD_DIM, BLOCK_N, CAUSAL or not EVEN_N, CAUSAL, TMA, True)
    elif CAUSAL:
        # keys below start_m are visible to every row and inside the sequence; the diagonal block is masked
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, kv_head, offs_m, 0, start_m, seq_k,
                                      qk_scale, HEAD_DIM, BLOCK_N, False, True, TMA, False)
        diagonal_end = tl.minimum(start_m + BLOCK_M, seq_k)
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, kv_head, offs_m, start_m,
                                      diagonal_end, seq_k, qk_scale, HEAD_DIM, BLOCK_N, True, True, TMA,
                                      False)
    else:
        whole = seq_k if EVEN_N else (seq_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, kv_head, offs_m, 0, whole, seq_k,
                                      qk_scale, HEAD_DIM, BLOCK_N, False, False, TMA, False)
        if not EVEN_N:
            acc, l_i, m_i = attend_blocks(acc, l_i, m_i, q, k_rows, v_rows, kv_head, offs_m, whole, seq_k,
                                          seq_k, qk_scale, HEAD_DIM, BLOCK_N, True, False, TMA, False)
    out = (acc / l_i[:, None]).to(o_ptr.dtype.element_ty)
    o_ptrs = o_ptr + q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if EVEN_M:
        tl.store(o_ptrs, out)
    else:
        tl.store(o_ptrs, out, mask=offs_m[:, None] < seq_q)


def kv_source(kv: torch.Tensor, seq_k: int, block_n: int, tma: bool) -> torch.Tensor | TensorDescriptor:
    """K or V as the kernel reads it: the tensor, or a TMA descriptor over its (kv heads, S, D) view."""
    if not tma:
        return kv
    head_dim = kv.shape[-1]
    return TensorDescriptor(kv, [kv.numel() // (seq_k * head_dim), seq_k, head_dim],
                            [seq_k * head_dim, head_dim, 1], [1, block_n, head_dim])


def scratch(size: int, alignment: int, stream: int | None, device: torch.device) -> torch.Tensor:
    """Global memory for the in-kernel Q descriptor of the warp-specialised path (128 bytes a program)."""
    return torch.empty(size, dtype=torch.int8, device=device)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    block_m, block_n, warps, stages = LARGE if seq_len >= 1024 else SMALL
    tma, warp_specialize = KV_LOADS
    if warp_specialize:
        triton.set_allocator(functools.partial(scratch, device=q.device))
    grid = (triton.cdiv(seq_len, block_m), batch * heads)
    k_src, v_src = (kv_source(t, seq_len, block_n, tma == 1) for t in (k, v))
    attention_kernel[grid](q, k_src, v_src, out, seq_len, seq_len, LOG2_E / head_dim ** 0.5, GROUP=1,
                           HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                           EVEN_M=seq_len % block_m == 0, EVEN_N=seq_len % block_n == 0, TMA=tma == 1,
                           WARP_SPECIALIZE=warp_specialize == 1, num_warps=warps, num_stages=stages)
    return out
