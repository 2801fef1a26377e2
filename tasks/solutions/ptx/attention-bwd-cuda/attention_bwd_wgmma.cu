// Attention backward (flash attention, FA3-style) for Hopper (sm_90a), CUDA C++ with inline PTX.
//
// q, k, v, o, do are (B*H*S, 128) bf16 row-major views (D = 128, S a multiple of 128); lse (B*H*S) fp32
// natural-log. Three kernels:
//   bwd_preprocess: delta[i] = sum_d o[i,d] do[i,d], lse2[i] = lse[i] * log2(e), dq_accum[i, :] = 0.
//   attention_bwd_wgmma: one block per (head bh, key block n of BN = 128 keys), 384 threads:
//     warpgroup 0 (producer, setmaxnreg.dec) - one thread TMA-loads the block's K and V (128 x 128 each,
//       as two 128 x 64 boxes, 128-byte swizzle) once, then for every query block m of BM = 64 queries the
//       Q and dO tiles (two 64 x 64 boxes each) and the 64 lse2 / delta values (1D bulk copies) into a
//       ring of STAGES stages (full[s]: 1 arrival + bytes; empty[s]: 8 consumer warps).
//     warpgroups 1, 2 (consumers, setmaxnreg.inc) own keys 64w .. 64w+63 of the block (w = 0, 1):
//       S^T  = K_w Q^T     (m64n64k16,  A = K  smem K-major, B = Q  smem K-major)     64 keys x 64 queries
//       dP^T = V_w dO^T    (m64n64k16,  A = V  smem K-major, B = dO smem K-major)
//       P^T  = exp2(S^T * scale*log2e - lse2[query])   (0 above the causal diagonal)
//       dS^T = P^T * (dP^T - delta[query])
//       dV_w += P^T dO     (m64n128k16, A = P^T  registers, B = dO smem N-major)
//       dK_w += dS^T Q     (m64n128k16, A = dS^T registers, B = Q  smem N-major)
//       dS^T -> shared (bf16, [128 keys][64 queries], 128-byte swizzle), named barrier of both consumers,
//       dQ[:, 64w..64w+63] = dS K[:, 64w..]  (m64n64k16, A = dS from smem through the transposed (M-major)
//                            descriptor, B = K smem N-major), added into dq_accum (fp32) with red.global.add.
//                            (DQ_TMA: staged in shared memory and added by a TMA reduce-add).
//     At the end dV and dK * scale leave from registers as bf16.
//   bwd_convert_dq: dq = bf16(dq_accum * scale).
// All tiles use the 128-byte swizzle TMA writes and the wgmma descriptors name (1024-byte atoms).
//
// Compile-time options (defines):
//   CAUSAL   0/1
//   STAGES   2 or 3: Q/dO/lse/delta ring depth.
//   EARLY_DV 1: dV += P^T dO is issued as soon as P^T is packed (runs while dS^T is computed);
//            0: dV is issued together with dK after dS^T (simplest order).
//   DQ_RED   0: dQ added with scalar red.global.add.f32 (32 per thread per query block);
//            1: red.global.add.v2.f32 (16 per thread; sm_90 vector reduction);
//            2: red.global.add.v4.f32 (8 per thread): lanes t, t^1 swap halves with one shuffle pair so that
//               even t own 4 consecutive columns of row r, odd t 4 of row r + 8 (16-byte aligned).
//   DQ_TMA   1: (replaces DQ_RED) each consumer stages its 64 x 64 fp32 dQ partial in shared memory (128-byte
//            swizzle, two 64-row x 32-column boxes) and one of its threads adds it into dq_accum with
//            cp.reduce.async.bulk.tensor (TMA reduce-add, the host passes dq_map). +32 KB of shared memory.
//   DS_KMAJOR 0: dS^T stored [key][query] and read by the dQ GEMM through a transposed (tnspA) descriptor;
//            1: fallback without tnspA: dS stored [query][key] (two 64 x 64 boxes, K-major, 2-byte stores).
//   AUX_BULK 1: the passes beside the backward (delta, the dQ conversion) read o, do and dq_accum by bulk
//            copies on an mbarrier; 0: by ordinary loads.
//   Q_ROTATE 1 (full mask only): key block n of a head starts its query loop n * (S/64) / (S/128) blocks in
//            and wraps around, so the head's key blocks add their dQ partials into different rows at any
//            moment; 0: every key block starts at query block 0 (causal loops start at their diagonal,
//            which spreads them already).
// Launch: grid = B*H*(S/128), block 384, dynamic shared memory = bwd_shared_bytes (the kernel traps if less);
// with DQ_TMA the kernel takes a fifth tensor map, dq_map, right after do_map.

typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;   // NVRTC has no <cstdint> without extra include paths

#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef EARLY_DV
#define EARLY_DV 0
#endif
#ifndef AUX_BULK
#define AUX_BULK 0
#endif
#ifndef DQ_RED
#define DQ_RED 1
#endif
#ifndef DS_KMAJOR
#define DS_KMAJOR 0
#endif
#ifndef DQ_TMA
#define DQ_TMA 0
#endif
#ifndef Q_ROTATE
#define Q_ROTATE 0
#endif

#if STAGES < 2 || STAGES > 3
#error "STAGES must be 2 or 3"
#endif
#if DQ_RED < 0 || DQ_RED > 2
#error "DQ_RED must be 0, 1 or 2"
#endif
#if DQ_TMA != 0 && DQ_TMA != 1
#error "DQ_TMA must be 0 or 1"
#endif
#if Q_ROTATE != 0 && Q_ROTATE != 1
#error "Q_ROTATE must be 0 or 1"
#endif
#if DQ_TMA && DQ_RED != 1
#error "DQ_TMA replaces the red.global path: leave DQ_RED at its default (1)"
#endif

constexpr int HEAD_DIM = 128, BM = 64, BN = 128;
constexpr uint32_t KBOX = 128 * 64 * 2;             // a 128-row x 64-column box of K or V: 16 KB
constexpr uint32_t KV_TILE = 2 * KBOX;              // K (or V) tile 128 x 128: 32 KB
constexpr uint32_t QBOX = 64 * 64 * 2;              // a 64-row x 64-column box of Q or dO: 8 KB
constexpr uint32_t Q_TILE = 2 * QBOX;               // 64 x 128: 16 KB
constexpr uint32_t STAGE_BYTES = 2 * Q_TILE;        // Q then dO
constexpr uint32_t DS_TILE = BN * BM * 2;           // dS^T bf16: 128 keys x 64 queries = 16 KB
constexpr uint32_t VEC_BYTES = BM * 4;              // 64 fp32 of lse2 or delta
constexpr uint32_t OFF_K = 0, OFF_V = KV_TILE, OFF_STAGES = 2 * KV_TILE;
constexpr uint32_t OFF_DS = OFF_STAGES + STAGES * STAGE_BYTES;
constexpr uint32_t DQ_BOX = 64 * 32 * 4;            // fp32 dQ staging box: 64 rows x 32 columns (128-byte rows)
constexpr uint32_t DQ_STAGE = 2 * DQ_BOX;           // one consumer's 64 x 64 fp32 dQ partial: 16 KB
constexpr uint32_t OFF_DQ = OFF_DS + 2 * DS_TILE;   // DQ_TMA: consumer w's staging at OFF_DQ + w * DQ_STAGE
constexpr uint32_t OFF_LSE = OFF_DQ + (DQ_TMA ? 2 * DQ_STAGE : 0);
constexpr uint32_t OFF_DELTA = OFF_LSE + STAGES * VEC_BYTES;
constexpr uint32_t OFF_BAR = OFF_DELTA + STAGES * VEC_BYTES;
constexpr uint32_t BARRIERS = 1 + 2 * STAGES;        // kv_full, full[], empty[]
constexpr uint32_t SHARED_BYTES = OFF_BAR + 8 * BARRIERS + 1024;   // + 1024 to align the base
extern "C" __constant__ uint32_t bwd_shared_bytes = SHARED_BYTES;
constexpr uint32_t CONSUMER_WARPS = 8;
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
constexpr float LOG2E = 1.4426950408889634f;

static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 168 * 384, "setmaxnreg budget");
static_assert(OFF_STAGES % 1024 == 0 && STAGE_BYTES % 1024 == 0 && OFF_DS % 1024 == 0 && QBOX % 1024 == 0
              && OFF_DQ % 1024 == 0 && DQ_BOX % 1024 == 0, "every box starts on a 1024-byte swizzle atom");
static_assert(SHARED_BYTES <= 232448, "more than the 227 KB of shared memory a Hopper block may have");

struct alignas(64) TensorMap { uint64_t opaque[16]; };  // CUtensorMap, encoded on the host

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}

// Waits until the phase of parity `parity` has completed: the n-th completion (from 0) has parity n & 1.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    while (!mbar_try_wait(bar, parity)) {}
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

// A 2D TMA load of the box at (x innermost, y) into shared memory; completes its bytes on the mbarrier.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

// A 1D bulk copy of `bytes` (multiple of 16, both addresses 16-byte aligned) completing on the mbarrier.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar) : "memory");
}

// wgmma shared-memory descriptor with the 128-byte swizzle: start, leading and stride byte offsets.
// K-major operand (rows of 128 bytes = 64 K-elements, 8-row atoms of 1024 bytes): lbo unused (16), sbo = 1024;
// a K step of 16 elements moves the start 32 bytes inside the atom.
// MN-major operand (rows of 128 bytes = 64 MN-elements, one row per K index): lbo = the step to the next 64
// MN-elements (the next box), sbo = 1024 (the next 8 K indices); a K step of 16 moves the start 2048 bytes.
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16
           | (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}
__device__ __forceinline__ uint64_t desc_k_major(uint32_t addr) { return make_desc(addr, 16, 1024); }
__device__ __forceinline__ uint64_t desc_mn_major(uint32_t addr, uint32_t box) { return make_desc(addr, box, 1024); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

__device__ __forceinline__ void pin(float* r, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
__device__ __forceinline__ void pin(uint32_t* r, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Two fp32 values rounded to bf16 and packed: `lo` at the lower address (cvt puts its first source high).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// D[64 x 64] (+)= A B, both from shared memory; TA / TB: 1 = the operand is MN-major (transposed).
template <int TA, int TB>
__device__ __forceinline__ void wgmma_ss64(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, %35, %36;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));
}

// D[64 x 128] += A B, A (bf16, 4 registers per k16 step) from registers, B from shared memory MN-major.
__device__ __forceinline__ void wgmma_rs128(float* d, const uint32_t* a, uint64_t db) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1u));
}

// X^T[64 rows of this consumer's keys x 64 queries] = A_w B^T over the head dimension: A = K or V tile rows
// 64w .. 64w+63 (K-major), B = Q or dO tile (64 rows, K-major). One commit group.
__device__ __forceinline__ void gemm_xt(float* acc, uint32_t a_tile, uint32_t b_tile) {
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        wgmma_ss64<0, 0>(acc, desc_k_major(a_tile + (kk / 4) * KBOX + (kk % 4) * 32),
                         desc_k_major(b_tile + (kk / 4) * QBOX + (kk % 4) * 32), kk > 0 ? 1u : 0u);
    }
}

// ACC[64 keys x 128] += A[64 keys x 64 queries] (registers) . B[64 queries x 128] (Q or dO tile, MN-major).
__device__ __forceinline__ void gemm_rs(float* acc, const uint32_t* a, uint32_t b_tile) {
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) wgmma_rs128(acc, a + 4 * kk, desc_mn_major(b_tile + kk * 16 * 128, QBOX));
}

// dQ[64 queries x 64 cols (64w..)] = dS[64 queries x 128 keys] . K[128 keys x 64 cols]: A = dS^T buffer
// ([key][query], MN-major: queries contiguous), B = K box w (MN-major: head-dim contiguous).
__device__ __forceinline__ void gemm_dq(float* acc, uint32_t ds_tile, uint32_t k_box) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        wgmma_ss64<1, 1>(acc, desc_mn_major(ds_tile + kk * 16 * 128, DS_TILE),
                         desc_mn_major(k_box + kk * 16 * 128, KBOX), kk > 0 ? 1u : 0u);
    }
}

// The same with A = dS stored K-major ([64 queries][128 keys] as two 64-key boxes): no transposed A.
__device__ __forceinline__ void gemm_dq_kmajor(float* acc, uint32_t ds_tile, uint32_t k_box) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        wgmma_ss64<0, 1>(acc, desc_k_major(ds_tile + (kk / 4) * QBOX + (kk % 4) * 32),
                         desc_mn_major(k_box + kk * 16 * 128, KBOX), kk > 0 ? 1u : 0u);
    }
}

// Byte offset of element (row, col) of a tile of 128-byte rows in the 128-byte swizzle (1024-aligned base):
// the 16-byte chunk index XOR row % 8.
__device__ __forceinline__ uint32_t swz(uint32_t row, uint32_t col_bytes) {
    return row * 128 + ((((col_bytes >> 4) ^ row) & 7) << 4) + (col_bytes & 15);
}

__device__ __forceinline__ void red_add_f32(float* p, float a) {
    asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(a) : "memory");
}
__device__ __forceinline__ void red_add_v2_f32(float* p, float a, float b) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(p), "f"(a), "f"(b) : "memory");
}
// 4 consecutive fp32 (p 16-byte aligned); vector red on .global needs sm_90.
__device__ __forceinline__ void red_add_v4_f32(float* p, float a, float b, float c, float d) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};"
                 :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// TMA reduce-add of the shared-memory box at src into the tensor at (x innermost, y); bulk-group completion.
__device__ __forceinline__ void tma_reduce_add_2d(const TensorMap* map, int x, int y, uint32_t src) {
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until this thread's bulk groups have finished reading their shared-memory sources.
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Until this thread's bulk groups have fully completed (writes to global memory performed).
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void st_shared_v2(uint32_t addr, float a, float b) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(addr), "f"(a), "f"(b) : "memory");
}
// The query block a key block visits at step i of its loop: its loop's blocks from m_begin, rotated by rot.
__device__ __forceinline__ int query_block(int i, int m_begin, int n_iter, int rot) {
    const int j = i + rot;
    return m_begin + (j >= n_iter ? j - n_iter : j);
}

// Accumulator layout of m64nNk16 (per thread): rows r = 16 warp + lane / 4 and r + 8; for each 8-column
// block j, x[4j], x[4j + 1] are columns 8j + 2 (lane % 4) + 0, 1 of row r and x[4j + 2], x[4j + 3] the
// same columns of row r + 8. Packed pairs p[2j] = (x[4j], x[4j+1]), p[2j+1] = (x[4j+2], x[4j+3]) are the
// A fragments of k16 step kk in p[4kk .. 4kk+3].

extern "C" __global__ void __launch_bounds__(384, 1)
attention_bwd_wgmma(const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
                    const __grid_constant__ TensorMap v_map, const __grid_constant__ TensorMap do_map,
#if DQ_TMA
                    const __grid_constant__ TensorMap dq_map,   // dq_accum as (B*H*S, 128) fp32, box 64 x 32
#endif
                    const float* __restrict__ lse2, const float* __restrict__ delta,
                    float* __restrict__ dq_accum, unsigned short* __restrict__ dk_out,
                    unsigned short* __restrict__ dv_out, int seq_len, float scale_log2, float scale) {
    extern __shared__ unsigned char smem_raw[];
    uint32_t dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    if (dynamic_bytes < SHARED_BYTES) __trap();
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char* base_ptr = smem_raw + (base - smem_addr(smem_raw));
    const uint32_t k_tile = base + OFF_K, v_tile = base + OFF_V, stages = base + OFF_STAGES;
    const uint32_t ds0 = base + OFF_DS;
    const uint32_t kv_full = base + OFF_BAR, full0 = kv_full + 8, empty0 = full0 + 8 * STAGES;
    const float* lse_s = reinterpret_cast<const float*>(base_ptr + OFF_LSE);
    const float* delta_s = reinterpret_cast<const float*>(base_ptr + OFF_DELTA);

    const int nblk = seq_len / BN;
    const int bh = blockIdx.x / nblk, n = blockIdx.x % nblk;   // a head's key blocks are neighbours
    const int head_row = bh * seq_len;
    const int m_begin = CAUSAL ? n * (BN / BM) : 0;           // causal: query blocks at or after the keys
    const int n_iter = seq_len / BM - m_begin;
    const int rot = (Q_ROTATE && !CAUSAL) ? n * n_iter / nblk : 0;  // where this block's query loop starts
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbar_init(kv_full, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            const int key_row = head_row + n * BN;
            mbar_arrive_expect_tx(kv_full, 2 * KV_TILE);
            tma_load_2d(k_tile, &k_map, 0, key_row, kv_full);
            tma_load_2d(k_tile + KBOX, &k_map, 64, key_row, kv_full);
            tma_load_2d(v_tile, &v_map, 0, key_row, kv_full);
            tma_load_2d(v_tile + KBOX, &v_map, 64, key_row, kv_full);
            for (int i = 0; i < n_iter; ++i) {
                const uint32_t s = i % STAGES;
                if (i >= STAGES) mbar_wait(empty0 + 8 * s, ((i / STAGES) - 1) & 1);
                const uint32_t bar = full0 + 8 * s, q_dst = stages + s * STAGE_BYTES;
                const int q_row = head_row + query_block(i, m_begin, n_iter, rot) * BM;
                mbar_arrive_expect_tx(bar, STAGE_BYTES + 2 * VEC_BYTES);
                tma_load_2d(q_dst, &q_map, 0, q_row, bar);
                tma_load_2d(q_dst + QBOX, &q_map, 64, q_row, bar);
                tma_load_2d(q_dst + Q_TILE, &do_map, 0, q_row, bar);
                tma_load_2d(q_dst + Q_TILE + QBOX, &do_map, 64, q_row, bar);
                bulk_load(base + OFF_LSE + s * VEC_BYTES, lse2 + q_row, VEC_BYTES, bar);
                bulk_load(base + OFF_DELTA + s * VEC_BYTES, delta + q_row, VEC_BYTES, bar);
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));
    const int w = warpgroup - 1;                                // keys 64w .. 64w + 63 of the block
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, t = lane % 4;
    const int r0 = 16 * warp + lane / 4;                        // accumulator rows r0, r0 + 8
    const int key0 = n * BN + 64 * w + r0;                      // this thread's keys key0, key0 + 8 (in head)
#if DQ_TMA
    const bool dq_issuer = threadIdx.x % 128 == 0;              // issues this consumer's dQ reduce copies
    const uint32_t dq_stage = base + OFF_DQ + w * DQ_STAGE;     // boxes: columns 64w + 0..31, 64w + 32..63
#endif
    const uint32_t k_rows = k_tile + w * 64 * 128, v_rows = v_tile + w * 64 * 128;

    float dv[64], dk[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) { dv[i] = 0.f; dk[i] = 0.f; }

    mbar_wait(kv_full, 0);
    for (int i = 0; i < n_iter; ++i) {
        const int m = query_block(i, m_begin, n_iter, rot);
        const uint32_t s = i % STAGES;
        const uint32_t q_tile = stages + s * STAGE_BYTES, do_tile = q_tile + Q_TILE;
        const uint32_t ds_tile = ds0 + (i & 1) * DS_TILE;
        mbar_wait(full0 + 8 * s, (i / STAGES) & 1);

        float sacc[32], dpacc[32];
        wgmma_fence();
        gemm_xt(sacc, k_rows, q_tile);
        wgmma_commit();
        gemm_xt(dpacc, v_rows, do_tile);
        wgmma_commit();

        wgmma_wait<1>();
        pin(sacc, 32);
        // P^T = exp2(S^T * scale*log2e - lse2[query]); column c of the accumulator is query m*BM + c.
        const float* lse_v = lse_s + s * BM;
        const float* delta_v = delta_s + s * BM;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float2 l2 = *reinterpret_cast<const float2*>(lse_v + 8 * j + 2 * t);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float pv = exp2_approx(fmaf(sacc[4 * j + e], scale_log2, -((e & 1) ? l2.y : l2.x)));
#if CAUSAL
                const int query = m * BM + 8 * j + 2 * t + (e & 1);
                const int key = key0 + 8 * (e >> 1);
                if (key > query) pv = 0.f;
#endif
                sacc[4 * j + e] = pv;
            }
        }
        uint32_t pb[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) pb[j] = pack_bf16x2(sacc[2 * j], sacc[2 * j + 1]);

#if EARLY_DV
        wgmma_fence();
        gemm_rs(dv, pb, do_tile);
        wgmma_commit();
        wgmma_wait<1>();          // S^T and dP^T done (groups complete in order); dV may still run
#else
        wgmma_wait<0>();
#endif
        pin(dpacc, 32);
        // dS^T = P^T (dP^T - delta[query]), kept in fp32 P.
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float2 d2 = *reinterpret_cast<const float2*>(delta_v + 8 * j + 2 * t);
#pragma unroll
            for (int e = 0; e < 4; ++e) dpacc[4 * j + e] = sacc[4 * j + e] * (dpacc[4 * j + e] - ((e & 1) ? d2.y : d2.x));
        }
        uint32_t dsb[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) dsb[j] = pack_bf16x2(dpacc[2 * j], dpacc[2 * j + 1]);
        // dS^T to shared memory: row = key in block (64w + r0, + 8), 128 bytes = 64 queries, swizzled.
        {
            unsigned char* ds_ptr = base_ptr + (ds_tile - base);
#if DS_KMAJOR
            // dS[query][key]: box w holds keys 64w..64w+63; row = query 8j + 2t (+1), byte = 2 * (r0 (+8)).
            unsigned char* box_ptr = ds_ptr + w * QBOX;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const uint32_t qa = 8 * j + 2 * t;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint32_t kb = 2 * (r0 + 8 * h);
                    const uint32_t v = dsb[2 * j + h];
                    *reinterpret_cast<unsigned short*>(box_ptr + swz(qa, kb)) = (unsigned short)(v & 0xffffu);
                    *reinterpret_cast<unsigned short*>(box_ptr + swz(qa + 1, kb)) = (unsigned short)(v >> 16);
                }
            }
#else
            const uint32_t row_a = 64 * w + r0, row_b = row_a + 8;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const uint32_t cb = 2 * (8 * j + 2 * t);   // byte of query 8j + 2t in the row
                *reinterpret_cast<uint32_t*>(ds_ptr + swz(row_a, cb)) = dsb[2 * j];
                *reinterpret_cast<uint32_t*>(ds_ptr + swz(row_b, cb)) = dsb[2 * j + 1];
            }
#endif
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic-proxy stores -> wgmma reads
        wgmma_fence();
#if !EARLY_DV
        gemm_rs(dv, pb, do_tile);
#endif
        gemm_rs(dk, dsb, q_tile);
        wgmma_commit();
#if DQ_TMA
        // Before dq_stage is written again: the reduce copies this thread issued last iteration must have read
        // it. It waits for that here, before it arrives at the barrier below; every thread that writes dq_stage
        // does so only after passing that barrier, so after the wait.
        if (dq_issuer) bulk_wait_read0();
#endif
        asm volatile("bar.sync 1, 256;" ::: "memory");                 // both consumers' dS^T are stored
        float dq[32];
        wgmma_fence();
#if DS_KMAJOR
        gemm_dq_kmajor(dq, ds_tile, k_tile + w * KBOX);
#else
        gemm_dq(dq, ds_tile, k_tile + w * KBOX);
#endif
        wgmma_commit();
        wgmma_wait<0>();
        pin(dq, 32);
        pin(dv, 64);
        pin(dk, 64);
        pin(pb, 16);
        pin(dsb, 16);
        if (lane == 0) mbar_arrive(empty0 + 8 * s);                     // Q, dO, lse, delta of stage s used
        __syncwarp();
        // dQ partial: rows = queries m*BM + r0 (+8), columns 64w + 8j + 2t (+1).
#if DQ_TMA
        // Staging box j / 4, row r0 (+8), bytes 32 (j % 4) + 8t .. +7, 128-byte swizzle (TMA unswizzles it).
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const uint32_t box = dq_stage + (j / 4) * DQ_BOX, cb = 32 * (j % 4) + 8 * t;
            st_shared_v2(box + swz(r0, cb), dq[4 * j], dq[4 * j + 1]);
            st_shared_v2(box + swz(r0 + 8, cb), dq[4 * j + 2], dq[4 * j + 3]);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // generic stores -> TMA (async) reads
        asm volatile("bar.sync %0, 128;" :: "r"(2 + w) : "memory");    // this consumer's 128 writers only
        if (dq_issuer) {
            const int dq_y = head_row + m * BM;
            tma_reduce_add_2d(&dq_map, 64 * w, dq_y, dq_stage);
            tma_reduce_add_2d(&dq_map, 64 * w + 32, dq_y, dq_stage + DQ_BOX);
            bulk_commit();
        }
#else
        float* dq_row0 = dq_accum + (size_t)(head_row + m * BM + r0) * HEAD_DIM + 64 * w + 2 * t;
        float* dq_row8 = dq_row0 + 8 * HEAD_DIM;
#if DQ_RED == 2
        // Lanes t and t^1 swap: even t send row r + 8's pair, odd t row r's; even t then hold row r columns
        // 8j + 2t .. +3, odd t row r + 8 columns 8j + 2(t - 1) .. +3: 4 consecutive, 16-byte aligned.
        const bool odd = t & 1;
        float* dq_v4 = odd ? dq_row8 - 2 : dq_row0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float s0 = odd ? dq[4 * j] : dq[4 * j + 2], s1 = odd ? dq[4 * j + 1] : dq[4 * j + 3];
            const float g0 = __shfl_xor_sync(0xffffffffu, s0, 1), g1 = __shfl_xor_sync(0xffffffffu, s1, 1);
            red_add_v4_f32(dq_v4 + 8 * j, odd ? g0 : dq[4 * j], odd ? g1 : dq[4 * j + 1],
                           odd ? dq[4 * j + 2] : g0, odd ? dq[4 * j + 3] : g1);
        }
#else
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#if DQ_RED
            red_add_v2_f32(dq_row0 + 8 * j, dq[4 * j], dq[4 * j + 1]);
            red_add_v2_f32(dq_row8 + 8 * j, dq[4 * j + 2], dq[4 * j + 3]);
#else
            red_add_f32(dq_row0 + 8 * j, dq[4 * j]);
            red_add_f32(dq_row0 + 8 * j + 1, dq[4 * j + 1]);
            red_add_f32(dq_row8 + 8 * j, dq[4 * j + 2]);
            red_add_f32(dq_row8 + 8 * j + 1, dq[4 * j + 3]);
#endif
        }
#endif
#endif
    }

    // dV and dK * scale: rows = keys key0 (+8), columns 8j + 2t (+1).
    const size_t out_row = (size_t)head_row + key0;
    unsigned short* dv0 = dv_out + out_row * HEAD_DIM + 2 * t;
    unsigned short* dk0 = dk_out + out_row * HEAD_DIM + 2 * t;
#pragma unroll
    for (int j = 0; j < HEAD_DIM / 8; ++j) {
        *reinterpret_cast<uint32_t*>(dv0 + 8 * j) = pack_bf16x2(dv[4 * j], dv[4 * j + 1]);
        *reinterpret_cast<uint32_t*>(dv0 + 8 * HEAD_DIM + 8 * j) = pack_bf16x2(dv[4 * j + 2], dv[4 * j + 3]);
        *reinterpret_cast<uint32_t*>(dk0 + 8 * j) = pack_bf16x2(dk[4 * j] * scale, dk[4 * j + 1] * scale);
        *reinterpret_cast<uint32_t*>(dk0 + 8 * HEAD_DIM + 8 * j) =
            pack_bf16x2(dk[4 * j + 2] * scale, dk[4 * j + 3] * scale);
    }
#if DQ_TMA
    if (dq_issuer) bulk_wait0();   // the last reduce copies: staging read and dq_accum written before exit
#endif
}

__device__ __forceinline__ float bf16_lo(uint32_t x) { return __int_as_float((int)(x << 16)); }
__device__ __forceinline__ float bf16_hi(uint32_t x) { return __int_as_float((int)(x & 0xffff0000u)); }

#if AUX_BULK
// delta = rowsum(o * do), lse2 = lse * log2(e) and a zeroed row of dq_accum, for 8 rows a block (a warp a
// row). The 8 rows of o and of do are contiguous: each arrives by one bulk copy on an mbarrier, so no operand
// of the task is read through ordinary loads. Launch: block 256, grid = rows / 8 (rows a multiple of 8).
extern "C" __global__ void __launch_bounds__(256)
bwd_preprocess(const unsigned short* __restrict__ o, const unsigned short* __restrict__ d_o,
               const float* __restrict__ lse, float* __restrict__ delta, float* __restrict__ lse2,
               float* __restrict__ dq_accum, int rows) {
    constexpr uint32_t SLAB_BYTES = 8 * HEAD_DIM * 2;
    __shared__ alignas(128) unsigned short slab[2][8 * HEAD_DIM];
    __shared__ alignas(8) uint64_t bar;
    const int first = blockIdx.x * 8, warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = first + warp;
    const uint32_t b = smem_addr(&bar);
    if (threadIdx.x == 0) {
        mbar_init(b, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_arrive_expect_tx(b, 2 * SLAB_BYTES);
        bulk_load(smem_addr(slab[0]), o + (size_t)first * HEAD_DIM, SLAB_BYTES, b);
        bulk_load(smem_addr(slab[1]), d_o + (size_t)first * HEAD_DIM, SLAB_BYTES, b);
    }
    mbar_wait(b, 0);
    const uint2 a = *reinterpret_cast<const uint2*>(&slab[0][warp * HEAD_DIM + 4 * lane]);
    const uint2 c = *reinterpret_cast<const uint2*>(&slab[1][warp * HEAD_DIM + 4 * lane]);
    float sum = bf16_lo(a.x) * bf16_lo(c.x) + bf16_hi(a.x) * bf16_hi(c.x)
                + bf16_lo(a.y) * bf16_lo(c.y) + bf16_hi(a.y) * bf16_hi(c.y);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (row >= rows) return;
    *reinterpret_cast<float4*>(dq_accum + (size_t)row * HEAD_DIM + 4 * lane) = make_float4(0.f, 0.f, 0.f, 0.f);
    if (lane == 0) {
        delta[row] = sum;
        lse2[row] = lse[row] * LOG2E;
    }
}

// dq = bf16(dq_accum * scale) for 1024 elements a block, which arrive by one bulk copy (count a multiple of 4).
// Launch: block 256, grid = ceil(count / 1024).
extern "C" __global__ void __launch_bounds__(256)
bwd_convert_dq(const float* __restrict__ dq_accum, unsigned short* __restrict__ dq, int count, float scale) {
    __shared__ alignas(128) float chunk[1024];
    __shared__ alignas(8) uint64_t bar;
    const int first = blockIdx.x * 1024, n = min(1024, count - first), i = 4 * threadIdx.x;
    const uint32_t b = smem_addr(&bar);
    if (threadIdx.x == 0) {
        mbar_init(b, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_arrive_expect_tx(b, 4 * n);
        bulk_load(smem_addr(chunk), dq_accum + first, 4 * n, b);
    }
    mbar_wait(b, 0);
    if (i >= n) return;
    const float4 x = *reinterpret_cast<const float4*>(&chunk[i]);
    uint2 y;
    y.x = pack_bf16x2(x.x * scale, x.y * scale);
    y.y = pack_bf16x2(x.z * scale, x.w * scale);
    *reinterpret_cast<uint2*>(dq + first + i) = y;
}
#else  // the same passes reading o, do and dq_accum with ordinary loads
// One warp per row of 128: delta = sum o * do (fp32), lse2 = lse * log2(e), dq_accum row = 0.
// Launch: block 256 (8 rows), grid = rows / 8.
extern "C" __global__ void __launch_bounds__(256)
bwd_preprocess(const unsigned short* __restrict__ o, const unsigned short* __restrict__ d_o,
               const float* __restrict__ lse, float* __restrict__ delta, float* __restrict__ lse2,
               float* __restrict__ dq_accum, int rows) {
    const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const uint2 a = *reinterpret_cast<const uint2*>(o + (size_t)row * HEAD_DIM + 4 * lane);
    const uint2 b = *reinterpret_cast<const uint2*>(d_o + (size_t)row * HEAD_DIM + 4 * lane);
    float sum = bf16_lo(a.x) * bf16_lo(b.x) + bf16_hi(a.x) * bf16_hi(b.x)
                + bf16_lo(a.y) * bf16_lo(b.y) + bf16_hi(a.y) * bf16_hi(b.y);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    *reinterpret_cast<float4*>(dq_accum + (size_t)row * HEAD_DIM + 4 * lane) = make_float4(0.f, 0.f, 0.f, 0.f);
    if (lane == 0) {
        delta[row] = sum;
        lse2[row] = lse[row] * LOG2E;
    }
}

// dq = bf16(dq_accum * scale), 4 elements per thread. Launch: block 256, grid = ceil(count / 1024).
extern "C" __global__ void __launch_bounds__(256)
bwd_convert_dq(const float* __restrict__ dq_accum, unsigned short* __restrict__ dq, int count, float scale) {
    const int i = 4 * (blockIdx.x * 256 + threadIdx.x);
    if (i >= count) return;
    const float4 x = *reinterpret_cast<const float4*>(dq_accum + i);
    uint2 y;
    y.x = pack_bf16x2(x.x * scale, x.y * scale);
    y.y = pack_bf16x2(x.z * scale, x.w * scale);
    *reinterpret_cast<uint2*>(dq + i) = y;
}
#endif
