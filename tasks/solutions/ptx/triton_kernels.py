"""Triton sources of the PTX that the `ptx` suite's reference solutions ship.

These kernels are compiled offline (``generate.py``) for sm_90a and sm_100a; the PTX they
produce is what the references load through ``warpgym.loader``. Every tile moves through
a host-built TMA descriptor (``cp.async.bulk.tensor`` completing on an ``mbarrier``) and every
tile product is a ``tl.dot``, which Triton lowers to ``wgmma`` on sm_90a and ``tcgen05.mma`` on
sm_100a. The same sources run in Triton's interpreter (fp16) so their arithmetic is tested on a CPU.

Layouts: GEMM operands are row-major, C = A @ B^T with B stored (N, K). Attention tensors are
(B, H, S, D) viewed as (B*H*S, D); S is a multiple of the largest query/key block (128).
"""

import triton
import triton.language as tl


@triton.jit
def _tile_order(pid, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """Programs walk the output in groups of GROUP_M tile rows so neighbours share B tiles in L2."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows
    pid_n = (pid % group) // rows
    return pid_m * BM, pid_n * BN


@triton.jit
def gemm_bf16(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              GROUP_M: tl.constexpr):
    off_m, off_n = _tile_order(tl.program_id(0), M, N, BM, BN, GROUP_M)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([off_n, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def gemm_bf16_persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """One program per SM walks tiles NUM_SMS apart; the flattened loop lets the TMA loads of the
    next tile start while this tile's epilogue stores, which a program per tile cannot."""
    tiles = tl.cdiv(M, BM) * tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
        off_m, off_n = _tile_order(tile, M, N, BM, BN, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(k_tiles):
            a = a_desc.load([off_m, kk * BK])
            b = b_desc.load([off_n, kk * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def gemm_fp8(a_desc, b_desc, c_desc, scale_a_ptr, scale_b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr, GROUP_M: tl.constexpr):
    off_m, off_n = _tile_order(tl.program_id(0), M, N, BM, BN, GROUP_M)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([off_m, k])
        b = b_desc.load([off_n, k])
        acc = tl.dot(a, b.T, acc)
    scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    c_desc.store([off_m, off_n], (acc * scale).to(c_desc.dtype))


@triton.jit
def _attn_fwd_block(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, lo, hi, qk_scale, BN: tl.constexpr,
                    MASK: tl.constexpr):
    for start_n in range(lo, hi, BN):
        k = k_desc.load([row0 + start_n, 0])
        s = tl.dot(q, k.T) * qk_scale
        if MASK:
            offs_n = start_n + tl.arange(0, BN)
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([row0 + start_n, 0])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd(q_desc, k_desc, v_desc, o_desc, lse_ptr, S, qk_scale, D: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, CAUSAL: tl.constexpr):
    """O and the natural-log LSE of softmax(Q K^T * scale) V for BM queries of one (batch, head).
    ``qk_scale`` is scale * log2(e): the softmax runs in base 2."""
    start_m = tl.program_id(0) * BM
    bh = tl.program_id(1)
    row0 = bh * S
    offs_m = start_m + tl.arange(0, BM)
    q = q_desc.load([row0 + start_m, 0])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    if CAUSAL:
        acc, l_i, m_i = _attn_fwd_block(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, 0, start_m, qk_scale,
                                        BN, False)
        acc, l_i, m_i = _attn_fwd_block(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, start_m, start_m + BM,
                                        qk_scale, BN, True)
    else:
        acc, l_i, m_i = _attn_fwd_block(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, 0, S, qk_scale, BN,
                                        False)
    o_desc.store([row0 + start_m, 0], (acc / l_i[:, None]).to(o_desc.dtype))
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + row0 + offs_m, lse)


@triton.jit
def attn_bwd_delta(o_ptr, do_ptr, delta_ptr, D: tl.constexpr, BM: tl.constexpr):
    """delta[i] = sum_d O[i, d] * dO[i, d], over the flattened (B*H*S) rows."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    offs = rows[:, None].to(tl.int64) * D + cols[None, :]
    o = tl.load(o_ptr + offs).to(tl.float32)
    do = tl.load(do_ptr + offs).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, 1))


@triton.jit
def _attn_bwd_kv_block(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, row0, start_n, lo, hi, qk_scale,
                       BM: tl.constexpr, BN: tl.constexpr, MASK: tl.constexpr):
    offs_n = start_n + tl.arange(0, BN)
    for start_m in range(lo, hi, BM):
        offs_m = start_m + tl.arange(0, BM)
        q = q_desc.load([row0 + start_m, 0])
        lse2 = tl.load(lse_ptr + row0 + offs_m) * 1.4426950408889634
        p_t = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse2[None, :])
        if MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        do = do_desc.load([row0 + start_m, 0])
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        delta = tl.load(delta_ptr + row0 + offs_m)
        dp_t = tl.dot(v, do.T)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
    return dk, dv


@triton.jit
def _attn_bwd_q_block(dq, q, do, lse2, delta, k_desc, v_desc, row0, offs_m, lo, hi, qk_scale,
                      BN: tl.constexpr, MASK: tl.constexpr):
    for start_n in range(lo, hi, BN):
        k = k_desc.load([row0 + start_n, 0])
        v = v_desc.load([row0 + start_n, 0])
        p = tl.math.exp2(tl.dot(q, k.T) * qk_scale - lse2[:, None])
        if MASK:
            offs_n = start_n + tl.arange(0, BN)
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, v.T)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    return dq


@triton.jit
def attn_bwd(q_small, do_small, k_small, v_small, q_big, do_big, k_big, v_big, dq_desc, dk_desc, dv_desc,
             lse_ptr, delta_ptr, S, sm_scale, qk_scale, D: tl.constexpr, SMALL: tl.constexpr,
             BIG: tl.constexpr, CAUSAL: tl.constexpr):
    """Program i computes dK, dV for key block i (BIG keys, looping over SMALL-query blocks) and
    dQ for query block i (BIG queries, looping over SMALL-key blocks): no atomics.
    ``*_small`` descriptors have SMALL-row boxes, ``*_big`` BIG-row boxes."""
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    row0 = bh * S
    start = pid * BIG

    # dK, dV for keys [start, start + BIG)
    k = k_big.load([row0 + start, 0])
    v = v_big.load([row0 + start, 0])
    dk = tl.zeros((BIG, D), tl.float32)
    dv = tl.zeros((BIG, D), tl.float32)
    if CAUSAL:
        dk, dv = _attn_bwd_kv_block(dk, dv, k, v, q_small, do_small, lse_ptr, delta_ptr, row0, start, start,
                                    start + BIG, qk_scale, SMALL, BIG, True)
        dk, dv = _attn_bwd_kv_block(dk, dv, k, v, q_small, do_small, lse_ptr, delta_ptr, row0, start,
                                    start + BIG, S, qk_scale, SMALL, BIG, False)
    else:
        dk, dv = _attn_bwd_kv_block(dk, dv, k, v, q_small, do_small, lse_ptr, delta_ptr, row0, start, 0, S,
                                    qk_scale, SMALL, BIG, False)
    dk_desc.store([row0 + start, 0], (dk * sm_scale).to(dk_desc.dtype))
    dv_desc.store([row0 + start, 0], dv.to(dv_desc.dtype))

    # dQ for queries [start, start + BIG)
    offs_m = start + tl.arange(0, BIG)
    q = q_big.load([row0 + start, 0])
    do = do_big.load([row0 + start, 0])
    lse2 = tl.load(lse_ptr + row0 + offs_m) * 1.4426950408889634
    delta = tl.load(delta_ptr + row0 + offs_m)
    dq = tl.zeros((BIG, D), tl.float32)
    if CAUSAL:
        dq = _attn_bwd_q_block(dq, q, do, lse2, delta, k_small, v_small, row0, offs_m, 0, start, qk_scale,
                               SMALL, False)
        dq = _attn_bwd_q_block(dq, q, do, lse2, delta, k_small, v_small, row0, offs_m, start, start + BIG,
                               qk_scale, SMALL, True)
    else:
        dq = _attn_bwd_q_block(dq, q, do, lse2, delta, k_small, v_small, row0, offs_m, 0, S, qk_scale, SMALL,
                               False)
    dq_desc.store([row0 + start, 0], (dq * sm_scale).to(dq_desc.dtype))


@triton.jit
def _attn_bwd_atomic_block(dk, dv, k, v, q_desc, do_desc, dq_acc_desc, dq_acc_ptr, lse_ptr, delta_ptr, row0,
                           offs_n, lo, hi, qk_scale, D: tl.constexpr, BM: tl.constexpr, MASK: tl.constexpr,
                           TMA_REDUCE: tl.constexpr):
    for start_m in range(lo, hi, BM):
        offs_m = start_m + tl.arange(0, BM)
        q = q_desc.load([row0 + start_m, 0])
        lse2 = tl.load(lse_ptr + row0 + offs_m) * 1.4426950408889634
        p_t = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse2[None, :])
        if MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        do = do_desc.load([row0 + start_m, 0])
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        delta = tl.load(delta_ptr + row0 + offs_m)
        ds_t = p_t * (tl.dot(v, do.T) - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
        dq = tl.dot(ds_t.T.to(k.dtype), k)
        if TMA_REDUCE:
            dq_acc_desc.atomic_add([row0 + start_m, 0], dq)
        else:
            rows = (row0 + offs_m).to(tl.int64)
            tl.atomic_add(dq_acc_ptr + rows[:, None] * D + tl.arange(0, D)[None, :], dq, sem="relaxed")
    return dk, dv


@triton.jit
def attn_bwd_atomic(q_desc, do_desc, k_desc, v_desc, dq_acc_desc, dq_acc_ptr, dk_desc, dv_desc, lse_ptr,
                    delta_ptr, S, sm_scale, qk_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    CAUSAL: tl.constexpr, TMA_REDUCE: tl.constexpr):
    """Program i computes dK, dV for key block i (BN keys, looping over BM-query blocks) and adds each
    query block's share of dQ = dS K to an fp32 buffer: five tile products per pair of blocks, where
    ``attn_bwd`` recomputes P and dP for dQ and takes seven. The sum is a TMA reduction (TMA_REDUCE) or
    per-element atomics (which Triton's interpreter can run); ``attn_bwd_dq`` scales it into dQ. Causal:
    only the query blocks that straddle the key block's diagonal are masked."""
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    row0 = bh * S
    start_n = pid * BN
    offs_n = start_n + tl.arange(0, BN)
    k = k_desc.load([row0 + start_n, 0])
    v = v_desc.load([row0 + start_n, 0])
    dk = tl.zeros((BN, D), tl.float32)
    dv = tl.zeros((BN, D), tl.float32)
    if CAUSAL:
        # no query before the block's first key sees it; query blocks stay aligned to BM
        lo = (start_n // BM) * BM
        past = ((start_n + BN + BM - 1) // BM) * BM  # from here on every query sees every key of the block
        dk, dv = _attn_bwd_atomic_block(dk, dv, k, v, q_desc, do_desc, dq_acc_desc, dq_acc_ptr, lse_ptr,
                                        delta_ptr, row0, offs_n, lo, past, qk_scale, D, BM, True, TMA_REDUCE)
        dk, dv = _attn_bwd_atomic_block(dk, dv, k, v, q_desc, do_desc, dq_acc_desc, dq_acc_ptr, lse_ptr,
                                        delta_ptr, row0, offs_n, past, S, qk_scale, D, BM, False, TMA_REDUCE)
    else:
        dk, dv = _attn_bwd_atomic_block(dk, dv, k, v, q_desc, do_desc, dq_acc_desc, dq_acc_ptr, lse_ptr,
                                        delta_ptr, row0, offs_n, 0, S, qk_scale, D, BM, False, TMA_REDUCE)
    dk_desc.store([row0 + start_n, 0], (dk * sm_scale).to(dk_desc.dtype))
    dv_desc.store([row0 + start_n, 0], dv.to(dv_desc.dtype))


@triton.jit
def attn_bwd_dq(acc_ptr, dq_ptr, sm_scale, D: tl.constexpr, BM: tl.constexpr):
    """dQ = sm_scale * the fp32 sum ``attn_bwd_atomic`` reduced, in dQ's type, over the flattened rows."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    offs = rows[:, None].to(tl.int64) * D + tl.arange(0, D)[None, :]
    tl.store(dq_ptr + offs, (tl.load(acc_ptr + offs) * sm_scale).to(dq_ptr.dtype.element_ty))
