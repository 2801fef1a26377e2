// Attention forward (flash attention) for Hopper (sm_90a), written by hand in CUDA C++ with inline PTX.
//
// q, k, v, o are (B*H*S, 128) bf16 row-major views (D = 128, S a multiple of 128); lse is (B*H*S) fp32.
// A work item is 128 queries of one head against its keys (all of them, or those at or before each query
// when CAUSAL); items come in pairs of query blocks (S/128 - 1 - p, p) of one head, whose causal work adds
// up to the same for every pair, and a persistent grid walks the pairs. Each block of 384 threads:
//   warpgroup 0, the producer, gives registers away (setmaxnreg.dec) and one of its threads issues TMA
//   loads: the item's Q tile (128 x 128, as two 128 x 64 boxes) into a buffer guarded by q_full / q_empty,
//   and the K and V tiles (128 keys x 128) into a ring of STAGES stages, each with its own k_full and
//   v_full (arrival + bytes) and one `empty` released by every consumer warp once the stage's V is used;
//   warpgroups 1 and 2, the consumers, claim the registers (setmaxnreg.inc) and own 64 query rows each:
//   S = Q K^T with wgmma m64n128k16 (both operands in shared memory), the online softmax of S in registers
//   (base 2, scale folded into the exponent), then O += P V with wgmma m64n128k16 taking P from registers
//   (the bf16 pairs of the S accumulator are exactly wgmma's A fragments) and V from shared memory in its
//   N-major (transposed) layout. With OVERLAP, S for the next K tile is issued with O += P V of the
//   current one, so both queue on the tensor cores and the row maxima are taken while P V runs (ptxas
//   keeps MUFU.EX2 out of the window of a wgmma that reads registers, so the exponentials wait for it);
//   with PINGPONG the two consumers take turns to issue their GEMMs (named barriers 1 and 2), so one's
//   exponentials overlap the other's GEMMs.
//   O leaves straight from registers as bf16, divided by the row sums; lse = ln(sum exp(s)).
// All tiles use the 128-byte swizzle that TMA writes and the wgmma descriptors name (1024-byte atoms).
//
// Compile-time options (defines): CAUSAL (0 or 1), STAGES (2 or 3), OVERLAP (0 or 1), PINGPONG (0 or 1).
// Launch: grid = min(pairs, SMs), block 384, dynamic shared memory = attention_shared_bytes (the host's);
// the kernel traps if it was given less.

typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;   // NVRTC has no <cstdint> without extra include paths

#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef OVERLAP
#define OVERLAP 1
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif

#if STAGES < 2 || STAGES > 3
#error "STAGES must be 2 or 3 (3 stages fill the 227 KB of shared memory)"
#endif

constexpr int HEAD_DIM = 128, BM = 128, BN = 128;
constexpr uint32_t BOX_BYTES = 128 * 64 * 2;          // one 128-row x 64-column box: 16 KB, 16 atoms
constexpr uint32_t TILE_BYTES = 2 * BOX_BYTES;        // a 128 x 128 tile as two boxes (columns 0-63, 64-127)
constexpr uint32_t STAGE_BYTES = 2 * TILE_BYTES;      // K then V
constexpr uint32_t BARRIERS = 2 + 3 * STAGES;         // q_full, q_empty, k_full[], v_full[], empty[]
constexpr uint32_t SHARED_BYTES = TILE_BYTES + STAGES * STAGE_BYTES + 1024 + 8 * BARRIERS;
// The layout's size in the module's constants, where the host's tests read it.
extern "C" __constant__ uint32_t attention_shared_bytes = SHARED_BYTES;
constexpr uint32_t CONSUMER_WARPS = 8;
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
constexpr float LN2 = 0.6931471805599453f;

static_assert(HEAD_DIM == 2 * 64 && BM == 2 * 64 && BN == 128, "two consumers of 64 rows; K and V tiles of 128 keys");
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 256 <= 168 * 384,
              "setmaxnreg moves registers within the block's launch allocation (168 per thread at 384 threads)");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg counts are multiples of 8");
static_assert(TILE_BYTES % 1024 == 0 && BOX_BYTES % 1024 == 0, "every box starts on a 1024-byte swizzle atom");
static_assert(SHARED_BYTES <= 232448, "more than the 227 KB of shared memory a Hopper block may have");
static_assert((BOX_BYTES >> 4) < (1 << 14), "the N-major leading offset (one box) fits the descriptor's 14 bits");

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

// Both 64-column boxes of the 128 x 128 tile whose first row is `row`.
__device__ __forceinline__ void tma_load_tile(uint32_t dst, const TensorMap* map, int row, uint32_t bar) {
    tma_load_2d(dst, map, 0, row, bar);
    tma_load_2d(dst + BOX_BYTES, map, 64, row, bar);
}

// wgmma descriptor of a K-major operand in the 128-byte swizzle layout TMA wrote: rows of 128 bytes, 8-row
// atoms of 1024 bytes (the stride offset), leading offset unused (1 by convention), base offset 0 (atoms
// 1024-aligned), bits 62-63 = 1: 128-byte swizzle. A K step of 16 elements moves the start 32 bytes.
__device__ __forceinline__ uint64_t desc_k_major(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32
           | (uint64_t)1 << 62;
}

// wgmma descriptor of an N-major operand (V as B of P V: N = head dim contiguous, K = keys strided) in the
// same layout: an atom is 8 keys x 64 columns; the leading offset steps N by 64 columns (to the other box,
// BOX_BYTES on), the stride offset steps K by 8 keys (1024 bytes). A K step of 16 keys moves the start 2048
// bytes, a whole number of atoms.
__device__ __forceinline__ uint64_t desc_n_major(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(BOX_BYTES >> 4) << 16
           | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

// Pins registers an in-flight wgmma reads or writes: the compiler may not move their other uses across it.
__device__ __forceinline__ void pin(float* r, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
__device__ __forceinline__ void pin(uint32_t* r, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}

// Named barriers for the consumers' turns: `bar.sync id` waits for 256 arrivals, 128 of them its own.
__device__ __forceinline__ void turn_wait(int id) { asm volatile("bar.sync %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ void turn_pass(int id) { asm volatile("bar.arrive %0, 256;" :: "r"(id) : "memory"); }

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

__device__ __forceinline__ void wgmma_ss(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs(float* d, const uint32_t* a, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// Item `slot` (0 or 1) of pair u: query blocks nmb - 1 - p and p of head u / pairs_per_head, the second
// absent where they coincide (odd nmb). The host's `schedule` walks the same order.
__device__ __forceinline__ bool pair_item(int u, int slot, int nmb, int& bh, int& mb) {
    const int per_head = (nmb + 1) / 2;
    bh = u / per_head;
    const int p = u % per_head;
    mb = slot == 0 ? nmb - 1 - p : p;
    return slot == 0 || p != nmb - 1 - p;
}

__device__ __forceinline__ int kv_blocks(int mb, int nmb) { return CAUSAL ? mb + 1 : nmb; }

// S[64 x 128] = Q[64 rows of this consumer] . K^T, one commit group.
__device__ __forceinline__ void gemm_qk(float* s, uint32_t q_rows, uint32_t k_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        const uint32_t off = (kk / 4) * BOX_BYTES + (kk % 4) * 32;
        wgmma_ss(s, desc_k_major(q_rows + off), desc_k_major(k_tile + off), kk > 0 ? 1u : 0u);
    }
    wgmma_commit();
}

// O[64 x 128] += P[64 x 128 keys] . V[128 keys x 128], P in registers (4 per 16 keys), one commit group.
__device__ __forceinline__ void gemm_pv(float* o, const uint32_t* p, uint32_t v_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        wgmma_rs(o, p + 4 * kk, desc_n_major(v_tile + kk * 16 * 128), 1u);
    }
    wgmma_commit();
}

// Accumulator layout of m64nNk16 (per thread): rows r = 16 warp + lane / 4 and r + 8; for each 8-column
// block j, x[4j], x[4j + 1] are columns 8j + 2 (lane % 4) + 0, 1 of row r and x[4j + 2], x[4j + 3] the
// same columns of row r + 8. The four lanes of a quad hold the whole of both rows.
struct RowState {
    float m[2];   // running max of the scaled scores (base 2), rows r and r + 8
    float l[2];   // this thread's part of the running sum of 2^(s - m)
};

// Causal diagonal block: key column c of the tile is masked for query row q of the tile where c > q.
__device__ __forceinline__ void mask_diagonal(float* s, int row, int lane) {
    const float neg_inf = __int_as_float(0xff800000);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int col = 8 * j + 2 * (lane % 4) + e;
            if (col > row) s[4 * j + e] = neg_inf;
            if (col > row + 8) s[4 * j + 2 + e] = neg_inf;
        }
    }
}

// Online softmax of one S tile in place: S becomes 2^(s * scale - m_new); alpha = 2^(m_old - m_new) is the
// factor the rows' O and sums are rescaled by. Every row has an unmasked key in the first block it sees,
// so m_new is finite and alpha is 0 on the first block.
__device__ __forceinline__ void softmax_tile(float* s, RowState& st, float scale, float* alpha) {
    float mx[2] = {s[0], s[2]};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        const float m_new = fmaxf(st.m[i], mx[i] * scale);
        alpha[i] = exp2_approx(st.m[i] - m_new);
        st.m[i] = m_new;
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int i = e / 2;
            s[4 * j + e] = exp2_approx(fmaf(s[4 * j + e], scale, -st.m[i]));
            sum[i] += s[4 * j + e];
        }
    }
    st.l[0] = st.l[0] * alpha[0] + sum[0];
    st.l[1] = st.l[1] * alpha[1] + sum[1];
}

__device__ __forceinline__ void rescale(float* o, const float* alpha) {
#pragma unroll
    for (int j = 0; j < HEAD_DIM / 8; ++j) {
        o[4 * j] *= alpha[0];
        o[4 * j + 1] *= alpha[0];
        o[4 * j + 2] *= alpha[1];
        o[4 * j + 3] *= alpha[1];
    }
}

// P as wgmma's A fragments: for keys 16kk..16kk+15, registers 4kk..4kk+3 hold (row r, keys 16kk + 2 (lane%4)
// + 0, 1), (row r + 8, same keys), (row r, those keys + 8), (row r + 8, + 8): accumulator pairs in order.
__device__ __forceinline__ void pack_p(uint32_t* p, const float* s) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) p[i] = pack_bf16x2(s[2 * i], s[2 * i + 1]);
}

extern "C" __global__ void __launch_bounds__(384, 1)
attention_fwd_wgmma(const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
                    const __grid_constant__ TensorMap v_map, unsigned short* __restrict__ o_out,
                    float* __restrict__ lse_out, int seq_len, int heads, float scale) {
    extern __shared__ unsigned char smem_raw[];
    uint32_t dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    if (dynamic_bytes < SHARED_BYTES) __trap();   // the host's size and this layout disagree
    // Q, then the stages (K, V), from a 1024-aligned base (the swizzle atom), the barriers after them.
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t q_tile = base, stages = base + TILE_BYTES;
    const uint32_t q_full = stages + STAGES * STAGE_BYTES, q_empty = q_full + 8;
    const uint32_t k_full0 = q_empty + 8, v_full0 = k_full0 + 8 * STAGES, empty0 = v_full0 + 8 * STAGES;
    const int warpgroup = threadIdx.x / 128;
    const int nmb = seq_len / BM;
    const int pairs = heads * ((nmb + 1) / 2);

    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        mbar_init(q_empty, CONSUMER_WARPS);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(k_full0 + 8 * s, 1);
            mbar_init(v_full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            uint32_t it = 0, items = 0;   // K/V tiles and items loaded so far: stage it % STAGES
            for (int u = blockIdx.x; u < pairs; u += gridDim.x) {
                for (int slot = 0; slot < 2; ++slot) {
                    int bh, mb;
                    if (!pair_item(u, slot, nmb, bh, mb)) continue;
                    const int head_row = bh * seq_len;
                    // The Q buffer's n-th refill waits for the consumers' n-th release (after their last S).
                    if (items > 0) mbar_wait(q_empty, (items - 1) & 1);
                    mbar_arrive_expect_tx(q_full, TILE_BYTES);
                    tma_load_tile(q_tile, &q_map, head_row + mb * BM, q_full);
                    const int n_kv = kv_blocks(mb, nmb);
                    for (int kb = 0; kb < n_kv; ++kb, ++it) {
                        const uint32_t s = it % STAGES, k_tile = stages + s * STAGE_BYTES;
                        if (it >= STAGES) mbar_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1);
                        mbar_arrive_expect_tx(k_full0 + 8 * s, TILE_BYTES);
                        tma_load_tile(k_tile, &k_map, head_row + kb * BN, k_full0 + 8 * s);
                        mbar_arrive_expect_tx(v_full0 + 8 * s, TILE_BYTES);
                        tma_load_tile(k_tile + TILE_BYTES, &v_map, head_row + kb * BN, v_full0 + 8 * s);
                    }
                    ++items;
                }
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));
    const int consumer = warpgroup - 1;                       // rows 64 consumer .. + 63 of each item
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int row = 64 * consumer + 16 * warp + lane / 4;     // this thread's first row in the item
    const uint32_t q_rows = q_tile + consumer * (64 * 128);  // 64 rows x 128 bytes inside each box
#if PINGPONG
    const int my_turn = 1 + consumer, their_turn = 2 - consumer;
    if (consumer == 1) turn_pass(1);                          // consumer 0 issues first
#define TURN_BEGIN() turn_wait(my_turn)
#define TURN_END() turn_pass(their_turn)
#else
#define TURN_BEGIN() ((void)0)
#define TURN_END() ((void)0)
#endif
    float s[BN / 2], o[HEAD_DIM / 2], alpha[2];
    uint32_t p[BN / 4];
    uint32_t it = 0, items = 0;
    for (int u = blockIdx.x; u < pairs; u += gridDim.x) {
        for (int slot = 0; slot < 2; ++slot) {
            int bh, mb;
            if (!pair_item(u, slot, nmb, bh, mb)) continue;
            const int n_kv = kv_blocks(mb, nmb);
            RowState st = {{__int_as_float(0xff800000), __int_as_float(0xff800000)}, {0.f, 0.f}};
#pragma unroll
            for (int i = 0; i < HEAD_DIM / 2; ++i) o[i] = 0.f;
            mbar_wait(q_full, items & 1);
#if OVERLAP
            {   // block 0: S only
                const uint32_t s0 = it % STAGES;
                mbar_wait(k_full0 + 8 * s0, (it / STAGES) & 1);
                TURN_BEGIN();
                gemm_qk(s, q_rows, stages + s0 * STAGE_BYTES);
                TURN_END();
                wgmma_wait<0>();
                pin(s, BN / 2);
                if (n_kv == 1 && lane == 0) mbar_arrive(q_empty);
                __syncwarp();
                if (CAUSAL && mb == 0) mask_diagonal(s, row, lane);
                softmax_tile(s, st, scale, alpha);
                pack_p(p, s);
            }
            for (int kb = 1; kb < n_kv; ++kb) {
                // S of block kb is issued before O += P V of block kb - 1; the softmax of kb starts while the
                // latter is in flight.
                const uint32_t prev = (it + kb - 1) % STAGES, cur = (it + kb) % STAGES;
                mbar_wait(k_full0 + 8 * cur, ((it + kb) / STAGES) & 1);
                mbar_wait(v_full0 + 8 * prev, ((it + kb - 1) / STAGES) & 1);
                TURN_BEGIN();
                gemm_qk(s, q_rows, stages + cur * STAGE_BYTES);
                gemm_pv(o, p, stages + prev * STAGE_BYTES + TILE_BYTES);
                TURN_END();
                wgmma_wait<1>();   // S is done; O += P V may still run
                pin(s, BN / 2);
                if (kb == n_kv - 1 && lane == 0) mbar_arrive(q_empty);
                __syncwarp();
                if (CAUSAL && kb == mb) mask_diagonal(s, row, lane);
                softmax_tile(s, st, scale, alpha);
                pin(s, BN / 2);    // the softmax is ordered before the wait (ptxas may still hoist it)
                pin(alpha, 2);
                wgmma_wait<0>();
                pin(o, HEAD_DIM / 2);
                pin(p, BN / 4);
                if (lane == 0) mbar_arrive(empty0 + 8 * prev);
                __syncwarp();
                rescale(o, alpha);
                pack_p(p, s);
            }
            {   // O += P V of the last block
                const uint32_t last = (it + n_kv - 1) % STAGES;
                mbar_wait(v_full0 + 8 * last, ((it + n_kv - 1) / STAGES) & 1);
                TURN_BEGIN();
                gemm_pv(o, p, stages + last * STAGE_BYTES + TILE_BYTES);
                TURN_END();
                wgmma_wait<0>();
                pin(o, HEAD_DIM / 2);
                pin(p, BN / 4);
                if (lane == 0) mbar_arrive(empty0 + 8 * last);
            }
#else
            for (int kb = 0; kb < n_kv; ++kb) {
                const uint32_t cur = (it + kb) % STAGES, parity = ((it + kb) / STAGES) & 1;
                mbar_wait(k_full0 + 8 * cur, parity);
                TURN_BEGIN();
                gemm_qk(s, q_rows, stages + cur * STAGE_BYTES);
                TURN_END();
                wgmma_wait<0>();
                pin(s, BN / 2);
                if (kb == n_kv - 1 && lane == 0) mbar_arrive(q_empty);
                __syncwarp();
                if (CAUSAL && kb == mb) mask_diagonal(s, row, lane);
                softmax_tile(s, st, scale, alpha);
                rescale(o, alpha);
                pack_p(p, s);
                mbar_wait(v_full0 + 8 * cur, parity);
                TURN_BEGIN();
                gemm_pv(o, p, stages + cur * STAGE_BYTES + TILE_BYTES);
                TURN_END();
                wgmma_wait<0>();
                pin(o, HEAD_DIM / 2);
                pin(p, BN / 4);
                if (lane == 0) mbar_arrive(empty0 + 8 * cur);
                __syncwarp();
            }
#endif
            __syncwarp();
            it += n_kv;
            ++items;

            // The quad's partial sums make the rows' sums; O / sum leaves as bf16, the LSE as fp32.
            float inv[2], lse[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                float l = st.l[i];
                l += __shfl_xor_sync(0xffffffffu, l, 1);
                l += __shfl_xor_sync(0xffffffffu, l, 2);
                inv[i] = 1.f / l;
                lse[i] = (st.m[i] + log2f(l)) * LN2;
            }
            const size_t out_row = (size_t)bh * seq_len + (size_t)mb * BM + row;
            unsigned short* o0 = o_out + out_row * HEAD_DIM + 2 * (lane % 4);
            unsigned short* o8 = o0 + 8 * HEAD_DIM;
#pragma unroll
            for (int j = 0; j < HEAD_DIM / 8; ++j) {
                *reinterpret_cast<uint32_t*>(o0 + 8 * j) = pack_bf16x2(o[4 * j] * inv[0], o[4 * j + 1] * inv[0]);
                *reinterpret_cast<uint32_t*>(o8 + 8 * j) = pack_bf16x2(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]);
            }
            if (lane % 4 == 0) {
                lse_out[out_row] = lse[0];
                lse_out[out_row + 8] = lse[1];
            }
        }
    }
#if PINGPONG
    if (consumer == 0) turn_wait(1);   // the other consumer's last pass, so no arrival is left pending
#endif
}
