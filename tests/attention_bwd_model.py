"""A CPU model of the hand-written attention backward's data movement (attention_bwd_wgmma.cu), for its tests.

Shared memory is a flat array of bf16 element slots addressed by byte. TMA writes each 64-column box with the
128-byte swizzle (as the repo's forward test models it); each wgmma reads its shared-memory operands through
the descriptor the kernel encodes (the canonical K-major / MN-major 128-byte-swizzle layouts of the PTX ISA,
the same formulas tests/test_attention_cuda_reference.py checks the GPU-verified forward against), register
operands through the documented fragment layouts (accumulator (row, col) of register i; A fragment of bf16
registers), the kernel's own per-thread index formulas (r0, t, j, e), its dS^T store address swz(row, byte),
its causal mask and its dQ reduction addresses. Then dq, dk, dv of whole heads are compared with the math.

The source strings the model mirrors (``MIRRORED``) are asserted to be in the .cu file by the tests, so an
edit there fails them.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
import torch

SRC = (pathlib.Path(__file__).parents[1] / "tasks" / "solutions" / "ptx" / "attention-bwd-cuda"
       / "attention_bwd_wgmma.cu").read_text()
KBOX, QBOX, DS_TILE = 128 * 64 * 2, 64 * 64 * 2, 128 * 64 * 2
D, BM, BN = 128, 64, 128
DS_KMAJOR = [0]   # which dS layout the model follows (the kernel's DS_KMAJOR define)
Q_ROTATE = [0]   # the kernel's Q_ROTATE define: where each key block's query loop starts
DQ_MODE = ["red1"]   # how dQ reaches dq_accum: "red1" (DQ_RED 1, v2), "red2" (DQ_RED 2, v4), "tma" (DQ_TMA 1)
DQ_BOX, DQ_STAGE = 64 * 32 * 4, 2 * 64 * 32 * 4
OFF_DQ = 2 * 32768 + 2 * 32768 + 2 * DS_TILE   # the kernel's OFF_DQ at STAGES 2 (1024-aligned)
BREAK = [None]    # negative controls: "unswizzled_staging", "no_shuffle"
STATS = {"dq_sts_wavefronts": set(), "red_v4_misaligned": 0, "tma_boxes": 0}

MIRRORED = [
    "wgmma_ss64<0, 0>(acc, desc_k_major(a_tile + (kk / 4) * KBOX + (kk % 4) * 32),",
    "desc_k_major(b_tile + (kk / 4) * QBOX + (kk % 4) * 32), kk > 0 ? 1u : 0u);",
    "wgmma_rs128(acc, a + 4 * kk, desc_mn_major(b_tile + kk * 16 * 128, QBOX));",
    "wgmma_ss64<1, 1>(acc, desc_mn_major(ds_tile + kk * 16 * 128, DS_TILE),",
    "desc_mn_major(k_box + kk * 16 * 128, KBOX), kk > 0 ? 1u : 0u);",
    "desc_k_major(uint32_t addr) { return make_desc(addr, 16, 1024); }",
    "desc_mn_major(uint32_t addr, uint32_t box) { return make_desc(addr, box, 1024); }",
    "return row * 128 + ((((col_bytes >> 4) ^ row) & 7) << 4) + (col_bytes & 15);",
    "const uint32_t k_rows = k_tile + w * 64 * 128, v_rows = v_tile + w * 64 * 128;",
    "gemm_xt(sacc, k_rows, q_tile);",
    "gemm_xt(dpacc, v_rows, do_tile);",
    "gemm_rs(dv, pb, do_tile);",
    "gemm_rs(dk, dsb, q_tile);",
    "gemm_dq(dq, ds_tile, k_tile + w * KBOX);",
    "for (int j = 0; j < 16; ++j) pb[j] = pack_bf16x2(sacc[2 * j], sacc[2 * j + 1]);",
    "for (int j = 0; j < 16; ++j) dsb[j] = pack_bf16x2(dpacc[2 * j], dpacc[2 * j + 1]);",
    "const uint32_t row_a = 64 * w + r0, row_b = row_a + 8;",
    "const uint32_t cb = 2 * (8 * j + 2 * t);   // byte of query 8j + 2t in the row",
    "*reinterpret_cast<uint32_t*>(ds_ptr + swz(row_a, cb)) = dsb[2 * j];",
    "*reinterpret_cast<uint32_t*>(ds_ptr + swz(row_b, cb)) = dsb[2 * j + 1];",
    "const int query = m * BM + 8 * j + 2 * t + (e & 1);",
    "const int key = key0 + 8 * (e >> 1);",
    "const int key0 = n * BN + 64 * w + r0;",
    "const int r0 = 16 * warp + lane / 4;",
    "float* dq_row0 = dq_accum + (size_t)(head_row + m * BM + r0) * HEAD_DIM + 64 * w + 2 * t;",
    "red_add_v2_f32(dq_row0 + 8 * j, dq[4 * j], dq[4 * j + 1]);",
    "red_add_v2_f32(dq_row8 + 8 * j, dq[4 * j + 2], dq[4 * j + 3]);",
    "const int m_begin = CAUSAL ? n * (BN / BM) : 0;",
    "const int n_iter = seq_len / BM - m_begin;",
    "const int rot = (Q_ROTATE && !CAUSAL) ? n * n_iter / nblk : 0;",
    "const int j = i + rot;",
    "return m_begin + (j >= n_iter ? j - n_iter : j);",
    "const int m = query_block(i, m_begin, n_iter, rot);",
    "const int q_row = head_row + query_block(i, m_begin, n_iter, rot) * BM;",
    "wgmma_ss64<0, 1>(acc, desc_k_major(ds_tile + (kk / 4) * QBOX + (kk % 4) * 32),",
    "unsigned char* box_ptr = ds_ptr + w * QBOX;",
    "const uint32_t qa = 8 * j + 2 * t;",
    "const uint32_t kb = 2 * (r0 + 8 * h);",
    "const uint32_t v = dsb[2 * j + h];",
    "*reinterpret_cast<unsigned short*>(box_ptr + swz(qa, kb)) = (unsigned short)(v & 0xffffu);",
    "*reinterpret_cast<unsigned short*>(box_ptr + swz(qa + 1, kb)) = (unsigned short)(v >> 16);",
    "tma_load_2d(q_dst + QBOX, &q_map, 64, q_row, bar);",
    "tma_load_2d(k_tile + KBOX, &k_map, 64, key_row, kv_full);",
    "*reinterpret_cast<uint32_t*>(dv0 + 8 * j) = pack_bf16x2(dv[4 * j], dv[4 * j + 1]);",
    "const float2 l2 = *reinterpret_cast<const float2*>(lse_v + 8 * j + 2 * t);",
    "float pv = exp2_approx(fmaf(sacc[4 * j + e], scale_log2, -((e & 1) ? l2.y : l2.x)));",
    # DQ_RED 2
    "float* dq_v4 = odd ? dq_row8 - 2 : dq_row0;",
    "const float s0 = odd ? dq[4 * j] : dq[4 * j + 2], s1 = odd ? dq[4 * j + 1] : dq[4 * j + 3];",
    "const float g0 = __shfl_xor_sync(0xffffffffu, s0, 1), g1 = __shfl_xor_sync(0xffffffffu, s1, 1);",
    "red_add_v4_f32(dq_v4 + 8 * j, odd ? g0 : dq[4 * j], odd ? g1 : dq[4 * j + 1],",
    "odd ? dq[4 * j + 2] : g0, odd ? dq[4 * j + 3] : g1);",
    # DQ_TMA 1
    "const uint32_t dq_stage = base + OFF_DQ + w * DQ_STAGE;",
    "const uint32_t box = dq_stage + (j / 4) * DQ_BOX, cb = 32 * (j % 4) + 8 * t;",
    "st_shared_v2(box + swz(r0, cb), dq[4 * j], dq[4 * j + 1]);",
    "st_shared_v2(box + swz(r0 + 8, cb), dq[4 * j + 2], dq[4 * j + 3]);",
    "tma_reduce_add_2d(&dq_map, 64 * w, dq_y, dq_stage);",
    "tma_reduce_add_2d(&dq_map, 64 * w + 32, dq_y, dq_stage + DQ_BOX);",
    "const int dq_y = head_row + m * BM;",
    "constexpr uint32_t DQ_BOX = 64 * 32 * 4;",
    "constexpr uint32_t OFF_DQ = OFF_DS + 2 * DS_TILE;",
]


def swizzle128(addr):
    return addr ^ (((addr >> 7) & 7) << 4)


def make_desc(addr, lbo, sbo):
    return ((addr & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 | 1 << 62


def fields(desc):
    assert desc >> 62 == 1 and (desc >> 49) & 7 == 0
    return {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4,
            "sbo": ((desc >> 32) & 0x3FFF) << 4}


def k_major(f, mn, k):
    """Canonical K-major, 128B swizzle, bf16: ((8,m),(8,2)):((64,SBO),(1,8)) elements, swizzled."""
    return swizzle128(f["start"] + (mn % 8) * 128 + (mn // 8) * f["sbo"] + 2 * k)


def mn_major(f, mn, k):
    """Canonical MN-major, 128B swizzle, bf16: ((8,8,m),(8,k)):((1,8,LBO),(64,SBO)) elements, swizzled."""
    return swizzle128(f["start"] + 2 * (mn % 64) + (mn // 64) * f["lbo"] + (k % 8) * 128
                      + (k // 8) * f["sbo"])


def desc_k_major(addr):
    return make_desc(addr, 16, 1024)


def desc_mn_major(addr, box):
    return make_desc(addr, box, 1024)


def swz(row, col_bytes):
    return row * 128 + ((((col_bytes >> 4) ^ row) & 7) << 4) + (col_bytes & 15)


def bf16(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float32)).to(torch.bfloat16).float().numpy()


class Smem:
    def __init__(self, nbytes):
        self.val = np.full(nbytes // 2, np.nan, dtype=np.float32)

    def put(self, byte_addr, values):
        byte_addr = np.asarray(byte_addr)
        assert np.all(byte_addr % 2 == 0)
        self.val[byte_addr // 2] = values

    def get(self, byte_addr):
        v = self.val[np.asarray(byte_addr) // 2]
        assert not np.isnan(v).any(), "read of a slot nobody wrote"
        return v

    def tma(self, base, box_bytes, tile):
        """tile rows x 128 as two boxes of 64 columns (TMA, 128-byte swizzle)."""
        rows = tile.shape[0]
        r, c = np.meshgrid(np.arange(rows), np.arange(D), indexing="ij")
        addr = swizzle128(base + (c // 64) * box_bytes + r * 128 + 2 * (c % 64))
        self.put(addr, bf16(tile))


def operand(smem, desc, mn_count, major):
    """The mn_count x 16 matrix a wgmma reads through `desc`."""
    f = fields(desc)
    mn, k = np.meshgrid(np.arange(mn_count), np.arange(16), indexing="ij")
    addr = (k_major if major == "k" else mn_major)(f, mn, k)
    return smem.get(addr)


def acc_pos(thread, reg):
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((reg // 2) % 2), 8 * (reg // 4) + 2 * (lane % 4) + reg % 2


def a_frag_pos(thread, element):
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((element // 2) % 2), 2 * (lane % 4) + element % 2 + 8 * (element // 4)


def to_regs(mat, n_regs):
    """A 64 x N accumulator as each thread's registers."""
    out = np.zeros((128, n_regs), dtype=np.float32)
    for th in range(128):
        for i in range(n_regs):
            out[th, i] = mat[acc_pos(th, i)]
    return out


def from_regs(regs):
    n = regs.shape[1] // 4 * 8
    mat = np.full((64, n), np.nan, dtype=np.float32)
    for th in range(128):
        for i in range(regs.shape[1]):
            mat[acc_pos(th, i)] = regs[th, i]
    return mat


def a_from_packed(packed, kk):
    """The 64 x 16 A matrix wgmma sees for k step kk: registers packed[:, 4kk .. 4kk+3] (lo, hi pairs)."""
    a = np.full((64, 16), np.nan, dtype=np.float32)
    for th in range(128):
        for q in range(4):
            for half in range(2):
                a[a_frag_pos(th, 2 * q + half)] = packed[th][4 * kk + q][half]
    return a


def run_cta(q, k, v, do, lse2, delta, n, causal, scale_log2, dq_accum):
    """One block (key block n) of one head: dk (unscaled) and dv of its 128 keys; adds into dq_accum."""
    S = q.shape[0]
    smem = Smem(1 << 18)
    k_tile, v_tile, stage, ds0 = 0, 32768, 65536, 65536 + 32768
    smem.tma(k_tile, KBOX, k[n * BN:(n + 1) * BN])
    smem.tma(v_tile, KBOX, v[n * BN:(n + 1) * BN])
    m_begin = n * (BN // BM) if causal else 0
    n_iter = S // BM - m_begin
    rot = n * n_iter // (S // BN) if Q_ROTATE[0] and not causal else 0
    threads = np.arange(128)
    warp, lane = threads // 32, threads % 32
    t, r0 = lane % 4, 16 * warp + lane // 4
    for i in range(n_iter):
        j = i + rot
        m = m_begin + (j - n_iter if j >= n_iter else j)
        q_tile, do_tile = stage, stage + 2 * QBOX
        smem.val[stage // 2:(stage + 4 * QBOX) // 2] = np.nan      # a fresh stage each time
        smem.tma(q_tile, QBOX, q[m * BM:(m + 1) * BM])
        smem.tma(do_tile, QBOX, do[m * BM:(m + 1) * BM])
        ds_tile = ds0 + (i & 1) * DS_TILE
        smem.val[ds_tile // 2:(ds_tile + DS_TILE) // 2] = np.nan
        dsb_all = []
        for w in range(2):
            k_rows, v_rows = k_tile + w * 64 * 128, v_tile + w * 64 * 128

            def gemm_xt(a_tile, b_tile):
                acc = np.zeros((64, 64), np.float32)
                for kk in range(8):
                    a = operand(smem, desc_k_major(a_tile + (kk // 4) * KBOX + (kk % 4) * 32), 64, "k")
                    b = operand(smem, desc_k_major(b_tile + (kk // 4) * QBOX + (kk % 4) * 32), 64, "k")
                    acc += a @ b.T
                return to_regs(acc, 32)

            sacc = gemm_xt(k_rows, q_tile)
            dpacc = gemm_xt(v_rows, do_tile)
            key0 = n * BN + 64 * w + r0
            for j in range(8):
                for e in range(4):
                    col = 8 * j + 2 * t + (e & 1)
                    pv = np.exp2(sacc[:, 4 * j + e] * scale_log2 - lse2[m * BM + col])
                    if causal:
                        query = m * BM + 8 * j + 2 * t + (e & 1)
                        key = key0 + 8 * (e >> 1)
                        pv = np.where(key > query, 0.0, pv)
                    sacc[:, 4 * j + e] = pv
            pb = [[(bf16(sacc[th, 2 * jj]), bf16(sacc[th, 2 * jj + 1])) for jj in range(16)]
                  for th in range(128)]
            for j in range(8):
                for e in range(4):
                    col = 8 * j + 2 * t + (e & 1)
                    dpacc[:, 4 * j + e] = sacc[:, 4 * j + e] * (dpacc[:, 4 * j + e] - delta[m * BM + col])
            dsb = [[(bf16(dpacc[th, 2 * jj]), bf16(dpacc[th, 2 * jj + 1])) for jj in range(16)]
                   for th in range(128)]
            dsb_all.append(dsb)
            # dS stores
            for th in (range(128) if DS_KMAJOR[0] else ()):
                for j in range(8):
                    qa = 8 * j + 2 * t[th]
                    for h in range(2):
                        kb = 2 * (r0[th] + 8 * h)
                        lo, hi = dsb[th][2 * j + h]
                        smem.put(np.array([ds_tile + w * QBOX + swz(qa, kb)]), np.array([lo], np.float32))
                        smem.put(np.array([ds_tile + w * QBOX + swz(qa + 1, kb)]), np.array([hi], np.float32))
            for th in (range(128) if not DS_KMAJOR[0] else ()):
                row_a = 64 * w + r0[th]
                row_b = row_a + 8
                for j in range(8):
                    cb = 2 * (8 * j + 2 * t[th])
                    for row, pair in ((row_a, dsb[th][2 * j]), (row_b, dsb[th][2 * j + 1])):
                        addr = ds_tile + swz(row, cb)
                        smem.put(np.array([addr, addr + 2]), np.array(pair, np.float32))

            def gemm_rs(acc, packed, b_tile):
                for kk in range(4):
                    a = a_from_packed(packed, kk)
                    b = operand(smem, desc_mn_major(b_tile + kk * 16 * 128, QBOX), 128, "mn")
                    acc += a @ b.T
            dvm = np.zeros((64, 128), np.float32)
            dkm = np.zeros((64, 128), np.float32)
            gemm_rs(dvm, pb, do_tile)
            gemm_rs(dkm, dsb, q_tile)
            dv_w = from_regs(to_regs(dvm, 64))
            dk_w = from_regs(to_regs(dkm, 64))
            run_cta.dv[n * BN + 64 * w: n * BN + 64 * w + 64] += dv_w
            run_cta.dk[n * BN + 64 * w: n * BN + 64 * w + 64] += dk_w
        # after the named barrier: dQ halves
        for w in range(2):
            acc = np.zeros((64, 64), np.float32)
            for kk in range(8):
                if DS_KMAJOR[0]:
                    a = operand(smem, desc_k_major(ds_tile + (kk // 4) * QBOX + (kk % 4) * 32), 64, "k")
                else:
                    a = operand(smem, desc_mn_major(ds_tile + kk * 16 * 128, DS_TILE), 64, "mn")
                b = operand(smem, desc_mn_major(k_tile + w * KBOX + kk * 16 * 128, KBOX), 64, "mn")
                acc += a @ b.T
            regs = to_regs(acc, 32)
            {"red1": dq_red1, "red2": dq_red2, "tma": dq_tma}[DQ_MODE[0]](regs, m, w, r0, t, dq_accum)


def dq_red1(regs, m, w, r0, t, dq_accum):
    """DQ_RED 1: red.global.add.v2.f32 at rows m*BM + r0 (+8), columns 64w + 8j + 2t (+1)."""
    for th in range(128):
        for j in range(8):
            for half, off in ((0, 0), (1, 8)):
                row = m * BM + r0[th] + off
                col = 64 * w + 2 * t[th] + 8 * j
                dq_accum[row, col] += regs[th, 4 * j + 2 * half]
                dq_accum[row, col + 1] += regs[th, 4 * j + 2 * half + 1]


def dq_red2(regs, m, w, r0, t, dq_accum):
    """DQ_RED 2: the xor-1 shuffle pair, then one red.global.add.v4.f32 per thread and j (16-byte aligned)."""
    touched = np.zeros((BM, 64), np.int32)
    for j in range(8):
        odd = t % 2 == 1
        s0 = np.where(odd, regs[:, 4 * j], regs[:, 4 * j + 2])
        s1 = np.where(odd, regs[:, 4 * j + 1], regs[:, 4 * j + 3])
        partner = np.arange(128) ^ 1          # lane ^ 1 in the same warp
        if BREAK[0] == "no_shuffle":
            partner = np.arange(128)
        g0, g1 = s0[partner], s1[partner]
        vals = np.stack([np.where(odd, g0, regs[:, 4 * j]), np.where(odd, g1, regs[:, 4 * j + 1]),
                         np.where(odd, regs[:, 4 * j + 2], g0), np.where(odd, regs[:, 4 * j + 3], g1)], 1)
        for th in range(128):
            # dq_row0 = row m*BM + r0, column 64w + 2t; dq_row8 = row + 8; odd: dq_row8 - 2
            row = m * BM + r0[th] + (8 if odd[th] else 0)
            col = 64 * w + 2 * t[th] - (2 if odd[th] else 0) + 8 * j
            byte = (row * D + col) * 4          # dq_accum rows of 512 bytes from a 256-aligned base
            STATS["red_v4_misaligned"] += int(byte % 16 != 0)
            dq_accum[row, col:col + 4] += vals[th]
            touched[row - m * BM, col - 64 * w: col - 64 * w + 4] += 1
    assert (touched == 1).all(), "red.v4 does not cover the 64 x 64 half exactly once"


def bank_wavefronts(addrs, nbytes):
    """Shared-memory wavefronts of one warp-wide store: the most distinct 4-byte words in one bank."""
    words = {}
    for a in addrs:
        for b in range(0, nbytes, 4):
            words.setdefault(((a + b) // 4) % 32, set()).add((a + b) // 4)
    return max(len(v) for v in words.values())


def dq_tma(regs, m, w, r0, t, dq_accum):
    """DQ_TMA 1: st.shared.v2.f32 into the swizzled staging boxes, then the TMA reduce-add of 2 boxes of
    64 rows x 32 fp32 columns, reading shared memory through the 128-byte swizzle of the box's address
    bits."""
    stage = np.full((2 * DQ_STAGE) // 4, np.nan, np.float32)      # both consumers' staging, fp32 slots
    dq_stage = OFF_DQ + w * DQ_STAGE
    swz_fn = (lambda row, cb: row * 128 + cb) if BREAK[0] == "unswizzled_staging" else swz
    for j in range(8):
        for rsel in range(2):
            addrs = []
            for th in range(128):
                box = dq_stage + (j // 4) * DQ_BOX
                cb = 32 * (j % 4) + 8 * t[th]
                a = box + swz_fn(r0[th] + 8 * rsel, cb)
                assert a % 8 == 0
                idx = (a - OFF_DQ) // 4
                assert np.isnan(stage[idx:idx + 2]).all(), "two stores to one staging slot"
                stage[idx:idx + 2] = regs[th, 4 * j + 2 * rsel: 4 * j + 2 * rsel + 2]
                addrs.append(a)
            for wp in range(4):
                STATS["dq_sts_wavefronts"].add(bank_wavefronts(addrs[32 * wp: 32 * wp + 32], 8))
    # the issuing thread: boxes at (x = 64w, y) from dq_stage and (x = 64w + 32, y) from dq_stage + DQ_BOX
    dq_y = m * BM
    for x, src in ((64 * w, dq_stage), (64 * w + 32, dq_stage + DQ_BOX)):
        assert src % 1024 == 0, "a 128-byte-swizzled TMA box must start on a 1024-byte atom"
        rr, c = np.meshgrid(np.arange(64), np.arange(32), indexing="ij")
        addr = swizzle128(src + rr * 128 + 4 * c)                  # TMA: linear box address, swizzled
        vals = stage[(addr - OFF_DQ) // 4]
        assert not np.isnan(vals).any(), "the TMA reduce reads a staging slot nobody wrote"
        dq_accum[dq_y:dq_y + 64, x:x + 32] += vals
        STATS["tma_boxes"] += 1


def reference(q, k, v, do, causal):
    scale = 1 / math.sqrt(D)
    qt, kt, vt, dot = (torch.as_tensor(x, dtype=torch.float64) for x in (q, k, v, do))
    s = qt @ kt.T * scale
    if causal:
        s = s.masked_fill(torch.triu(torch.ones_like(s, dtype=torch.bool), 1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[:, None])
    o = p @ vt
    delta = (o * dot).sum(-1)
    dp = dot @ vt.T
    ds = p * (dp - delta[:, None])
    return ((ds @ kt * scale).numpy(), (ds.T @ qt * scale).numpy(), (p.T @ dot).numpy(), lse.numpy(),
            delta.numpy())


def check(S, causal, seed=0):
    g = np.random.default_rng(seed)
    q, k, v, do = (bf16(g.standard_normal((S, D)).astype(np.float32)) for _ in range(4))
    dq_ref, dk_ref, dv_ref, lse, delta = reference(q, k, v, do, causal)
    scale = 1 / math.sqrt(D)
    lse2 = (lse * 1.4426950408889634).astype(np.float32)
    dq_accum = np.zeros((S, D), np.float32)
    run_cta.dv = np.zeros((S, D), np.float32)
    run_cta.dk = np.zeros((S, D), np.float32)
    for n in range(S // BN):
        run_cta(q, k, v, do, lse2, delta.astype(np.float32), n, causal, scale * 1.4426950408889634, dq_accum)
    got = {"dq": dq_accum * scale, "dk": run_cta.dk * scale, "dv": run_cta.dv}
    ref = {"dq": dq_ref, "dk": dk_ref, "dv": dv_ref}
    ok = True
    for name in got:
        err = np.abs(got[name] - ref[name]).max()
        rel = err / np.abs(ref[name]).max()
        print(f"S={S} causal={causal} {name}: max abs err {err:.3e}, rel {rel:.3e}")
        ok &= rel < 2e-2
    return ok
