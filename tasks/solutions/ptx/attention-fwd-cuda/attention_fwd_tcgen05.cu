// Attention forward (flash attention) for Blackwell (sm_100a), written by hand in CUDA C++ with inline PTX.
//
// The same work items as the Hopper kernel (attention_fwd_wgmma.cu): 128 queries of one head, in pairs of
// query blocks (S/128 - 1 - p, p) walked by a persistent grid; q, k, v, o are (B*H*S, 128) bf16 views and
// lse is (B*H*S) fp32. Each block of 256 threads specialises its warps:
//   warp 0: one thread issues TMA loads of the item's Q tile and of K and V tiles into a ring of STAGES
//     stages (k_full, v_full: arrival + bytes; kv_empty: completed by tcgen05.commit after O += P V);
//   warp 1: allocates 512 columns of tensor memory (two S buffers of 128 columns, O at column 256) and one
//     thread issues the MMAs: S(x) = Q K(x)^T into S buffer x % 2 (M = 128, N = 128, K = 16 per
//     instruction, both operands K-major in shared memory), committed to s_full; then O (+)= P(x-1) V(x-1)
//     once the softmax has published P(x-1) (p_full), with P K-major from shared memory and V N-major;
//     committed to kv_empty and pv_done;
//   warps 4-7, the softmax warpgroup: thread t owns query row t (TMEM lane t). It reads its row of S with
//     tcgen05.ld, does the online softmax in registers (base 2, scale folded into the exponent), rescales
//     O in tensor memory when its running max moved (tcgen05.ld / st, skipped when no row of the warp
//     changed), writes P as bf16 into shared memory in the 128-byte swizzled K-major layout the MMA reads,
//     and after the item's last block divides O by the row sums and stores it with the LSE.
// S(x + 2) reuses the buffer of S(x) only after the MMA thread waited p_full(x): the softmax has read it.
//
// Compile-time options (defines): CAUSAL (0 or 1), STAGES (2).
// Launch: grid = min(pairs, SMs), block 256, dynamic shared memory = attention_shared_bytes (the host's);
// the kernel traps if it was given less.

typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;   // NVRTC has no <cstdint> without extra include paths

#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef STAGES
#define STAGES 2
#endif

#if STAGES != 2
#error "STAGES must be 2 (Q, two K/V stages and P fill 192 KB of the 227 KB)"
#endif

constexpr int HEAD_DIM = 128, BM = 128, BN = 128;
constexpr uint32_t BOX_BYTES = 128 * 64 * 2;          // one 128-row x 64-column box: 16 KB
constexpr uint32_t TILE_BYTES = 2 * BOX_BYTES;        // a 128 x 128 bf16 tile as two boxes
constexpr uint32_t STAGE_BYTES = 2 * TILE_BYTES;      // K then V
constexpr uint32_t BARRIERS = 2 + 3 * STAGES + 2 + 3; // q_full, q_empty, k/v_full[], kv_empty[], s_full[2], p_full, pv_done, o_empty
constexpr uint32_t SHARED_BYTES = 2 * TILE_BYTES + STAGES * STAGE_BYTES + 1024 + 8 * BARRIERS + 16;
// The layout's size in the module's constants, where the host's tests read it.
extern "C" __constant__ uint32_t attention_shared_bytes = SHARED_BYTES;
constexpr uint32_t SOFTMAX_THREADS = 128;
constexpr uint32_t TMEM_COLS = 512, S_COL = 0, O_COL = 2 * BN;
constexpr float LN2 = 0.6931471805599453f;

// Instruction descriptors, kind::f16: D fp32 (bits 4-5 = 1), A and B bf16 (bits 7-9, 10-12 = 1), N >> 3 in
// bits 17-22, M >> 4 in bits 24-28. S = Q K^T: both K-major. O += P V: B (V) transposed, N-major (bit 16).
constexpr uint32_t IDESC_QK = (1u << 4) | (1u << 7) | (1u << 10) | ((uint32_t)(BN >> 3) << 17)
                              | ((uint32_t)(BM >> 4) << 24);
constexpr uint32_t IDESC_PV = (1u << 4) | (1u << 7) | (1u << 10) | (1u << 16)
                              | ((uint32_t)(HEAD_DIM >> 3) << 17) | ((uint32_t)(BM >> 4) << 24);

static_assert(O_COL + HEAD_DIM <= TMEM_COLS, "two S buffers and O fit the allocation");
static_assert(SHARED_BYTES <= 232448, "more than the 227 KB of shared memory a block may have");
static_assert(TILE_BYTES % 1024 == 0 && BOX_BYTES % 1024 == 0, "every box starts on a 1024-byte swizzle atom");
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

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

__device__ __forceinline__ void tma_load_tile(uint32_t dst, const TensorMap* map, int row, uint32_t bar) {
    tma_load_2d(dst, map, 0, row, bar);
    tma_load_2d(dst + BOX_BYTES, map, 64, row, bar);
}

// Shared-memory descriptors (tcgen05 layout: bits 46-48 the fixed 0b001, bits 61-63 = 2: 128-byte swizzle).
// K-major: rows of 128 bytes, stride offset 1024 (8-row atoms), leading offset unused (1); a K step of 16
// elements moves the start 32 bytes.
__device__ __forceinline__ uint64_t desc_k_major(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(16 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32
           | (uint64_t)1 << 46 | (uint64_t)2 << 61;
}

// N-major (V as B of P V): atoms of 8 keys x 64 columns; the leading offset steps N by 64 columns (the other
// box), the stride offset steps K by 8 keys (1024 bytes); a K step of 16 keys moves the start 2048 bytes.
__device__ __forceinline__ uint64_t desc_n_major(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(BOX_BYTES >> 4) << 16
           | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 46 | (uint64_t)2 << 61;
}

__device__ __forceinline__ void tc_fence_before() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void tc_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }

// D (+)= A . B with D in tensor memory; accumulate = 0: D = A . B.
__device__ __forceinline__ void mma_bf16(uint32_t d_tmem, uint64_t da, uint64_t db, uint32_t idesc,
                                         uint32_t accumulate) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}"
                 :: "r"(d_tmem), "l"(da), "l"(db), "r"(idesc), "r"(accumulate) : "memory");
}

// The mbarrier completes once every tcgen05 operation this thread issued before has completed.
__device__ __forceinline__ void mma_commit(uint32_t bar) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                 :: "r"(bar) : "memory");
}

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
}

// The 128 fp32 columns of this thread's TMEM lane from `taddr` on; waits for the load inside the asm, so
// no use of r can be scheduled before the data is there.
__device__ __forceinline__ void tmem_load_128(uint32_t taddr, uint32_t* r) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x128.b32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, [%128];\n\t"
                 "tcgen05.wait::ld.sync.aligned;"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31]), "=r"(r[32]), "=r"(r[33]), "=r"(r[34]), "=r"(r[35]), "=r"(r[36]), "=r"(r[37]), "=r"(r[38]), "=r"(r[39]), "=r"(r[40]), "=r"(r[41]), "=r"(r[42]), "=r"(r[43]), "=r"(r[44]), "=r"(r[45]), "=r"(r[46]), "=r"(r[47]), "=r"(r[48]), "=r"(r[49]), "=r"(r[50]), "=r"(r[51]), "=r"(r[52]), "=r"(r[53]), "=r"(r[54]), "=r"(r[55]), "=r"(r[56]), "=r"(r[57]), "=r"(r[58]), "=r"(r[59]), "=r"(r[60]), "=r"(r[61]), "=r"(r[62]), "=r"(r[63]), "=r"(r[64]), "=r"(r[65]), "=r"(r[66]), "=r"(r[67]), "=r"(r[68]), "=r"(r[69]), "=r"(r[70]), "=r"(r[71]), "=r"(r[72]), "=r"(r[73]), "=r"(r[74]), "=r"(r[75]), "=r"(r[76]), "=r"(r[77]), "=r"(r[78]), "=r"(r[79]), "=r"(r[80]), "=r"(r[81]), "=r"(r[82]), "=r"(r[83]), "=r"(r[84]), "=r"(r[85]), "=r"(r[86]), "=r"(r[87]), "=r"(r[88]), "=r"(r[89]), "=r"(r[90]), "=r"(r[91]), "=r"(r[92]), "=r"(r[93]), "=r"(r[94]), "=r"(r[95]), "=r"(r[96]), "=r"(r[97]), "=r"(r[98]), "=r"(r[99]), "=r"(r[100]), "=r"(r[101]), "=r"(r[102]), "=r"(r[103]), "=r"(r[104]), "=r"(r[105]), "=r"(r[106]), "=r"(r[107]), "=r"(r[108]), "=r"(r[109]), "=r"(r[110]), "=r"(r[111]), "=r"(r[112]), "=r"(r[113]), "=r"(r[114]), "=r"(r[115]), "=r"(r[116]), "=r"(r[117]), "=r"(r[118]), "=r"(r[119]), "=r"(r[120]), "=r"(r[121]), "=r"(r[122]), "=r"(r[123]), "=r"(r[124]), "=r"(r[125]), "=r"(r[126]), "=r"(r[127])
                 : "r"(taddr) : "memory");
}

__device__ __forceinline__ void tmem_load_32(uint32_t taddr, uint32_t* r) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];\n\t"
                 "tcgen05.wait::ld.sync.aligned;"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
                 : "r"(taddr) : "memory");
}

// 32 fp32 columns into this thread's TMEM lane; waits for the store inside the asm.
__device__ __forceinline__ void tmem_store_32(uint32_t taddr, const uint32_t* r) {
    asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], "
                 "{%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32};\n\t"
                 "tcgen05.wait::st.sync.aligned;"
                 :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]), "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31]) : "memory");
}

// Item `slot` (0 or 1) of pair u, as in the Hopper kernel and the host's `schedule`.
__device__ __forceinline__ bool pair_item(int u, int slot, int nmb, int& bh, int& mb) {
    const int per_head = (nmb + 1) / 2;
    bh = u / per_head;
    const int p = u % per_head;
    mb = slot == 0 ? nmb - 1 - p : p;
    return slot == 0 || p != nmb - 1 - p;
}

__device__ __forceinline__ int kv_blocks(int mb, int nmb) { return CAUSAL ? mb + 1 : nmb; }

// Byte offset of the 16-byte chunk `chunk` (0..15: columns 8 chunk .. + 7) of row `row` in a 128 x 128 bf16
// tile stored as two 128-byte swizzled boxes: the chunk's place in its 128-byte row is XORed with row % 8.
__device__ __forceinline__ uint32_t swizzled_chunk(int row, int chunk) {
    return (uint32_t)(chunk / 8) * BOX_BYTES + (uint32_t)row * 128 + (uint32_t)(((chunk % 8) ^ (row % 8)) * 16);
}

extern "C" __global__ void __launch_bounds__(256, 1)
attention_fwd_tcgen05(const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
                      const __grid_constant__ TensorMap v_map, unsigned short* __restrict__ o_out,
                      float* __restrict__ lse_out, int seq_len, int heads, float scale) {
    extern __shared__ unsigned char smem_raw[];
    uint32_t dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    if (dynamic_bytes < SHARED_BYTES) __trap();   // the host's size and this layout disagree
    // Q, the stages (K, V), P from a 1024-aligned base, then the barriers and the TMEM address slot.
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t q_tile = base, stages = base + TILE_BYTES, p_tile = stages + STAGES * STAGE_BYTES;
    const uint32_t q_full = p_tile + TILE_BYTES, q_empty = q_full + 8;
    const uint32_t k_full0 = q_empty + 8, v_full0 = k_full0 + 8 * STAGES, kv_empty0 = v_full0 + 8 * STAGES;
    const uint32_t s_full0 = kv_empty0 + 8 * STAGES, p_full = s_full0 + 16, pv_done = p_full + 8;
    const uint32_t o_empty = pv_done + 8, tmem_slot = o_empty + 8;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int nmb = seq_len / BM;
    const int pairs = heads * ((nmb + 1) / 2);

    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        mbar_init(q_empty, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(k_full0 + 8 * s, 1);
            mbar_init(v_full0 + 8 * s, 1);
            mbar_init(kv_empty0 + 8 * s, 1);
        }
        mbar_init(s_full0, 1);
        mbar_init(s_full0 + 8, 1);
        mbar_init(p_full, SOFTMAX_THREADS);
        mbar_init(pv_done, 1);
        mbar_init(o_empty, SOFTMAX_THREADS);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (warp == 1) {   // a whole warp allocates; the address lands in shared memory
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                     :: "r"(tmem_slot), "r"(TMEM_COLS) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
    }
    tc_fence_before();
    __syncthreads();
    tc_fence_after();
    uint32_t tmem_base;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(tmem_base) : "r"(tmem_slot) : "memory");

    if (warp == 0) {
        if (lane == 0) {
            uint32_t it = 0, items = 0;
            for (int u = blockIdx.x; u < pairs; u += gridDim.x) {
                for (int slot = 0; slot < 2; ++slot) {
                    int bh, mb;
                    if (!pair_item(u, slot, nmb, bh, mb)) continue;
                    const int head_row = bh * seq_len;
                    if (items > 0) mbar_wait(q_empty, (items - 1) & 1);
                    mbar_arrive_expect_tx(q_full, TILE_BYTES);
                    tma_load_tile(q_tile, &q_map, head_row + mb * BM, q_full);
                    const int n_kv = kv_blocks(mb, nmb);
                    for (int kb = 0; kb < n_kv; ++kb, ++it) {
                        const uint32_t s = it % STAGES, k_tile = stages + s * STAGE_BYTES;
                        if (it >= STAGES) mbar_wait(kv_empty0 + 8 * s, ((it / STAGES) - 1) & 1);
                        mbar_arrive_expect_tx(k_full0 + 8 * s, TILE_BYTES);
                        tma_load_tile(k_tile, &k_map, head_row + kb * BN, k_full0 + 8 * s);
                        mbar_arrive_expect_tx(v_full0 + 8 * s, TILE_BYTES);
                        tma_load_tile(k_tile + TILE_BYTES, &v_map, head_row + kb * BN, v_full0 + 8 * s);
                    }
                    ++items;
                }
            }
        }
        __syncwarp();
    } else if (warp == 1) {
        if (lane == 0) {
            uint32_t x = 0, items = 0;   // x: K/V blocks begun so far, over all items
            // O (+)= P(y) V(y); the first block of an item overwrites O once the softmax has read the last.
            auto pv = [&](uint32_t y, bool first) {
                mbar_wait(p_full, y & 1);
                if (first && items > 0) mbar_wait(o_empty, (items - 1) & 1);
                const uint32_t s = y % STAGES, v_tile = stages + s * STAGE_BYTES + TILE_BYTES;
                mbar_wait(v_full0 + 8 * s, (y / STAGES) & 1);
                tc_fence_after();
#pragma unroll
                for (int kk = 0; kk < BN / 16; ++kk) {
                    const uint32_t off = (kk / 4) * BOX_BYTES + (kk % 4) * 32;
                    mma_bf16(tmem_base + O_COL, desc_k_major(p_tile + off), desc_n_major(v_tile + kk * 16 * 128),
                             IDESC_PV, (!first || kk > 0) ? 1u : 0u);
                }
                mma_commit(kv_empty0 + 8 * s);   // K and V of the stage are read
                mma_commit(pv_done);             // O holds P(y) V(y); the P buffer is free
            };
            for (int u = blockIdx.x; u < pairs; u += gridDim.x) {
                for (int slot = 0; slot < 2; ++slot) {
                    int bh, mb;
                    if (!pair_item(u, slot, nmb, bh, mb)) continue;
                    const int n_kv = kv_blocks(mb, nmb);
                    mbar_wait(q_full, items & 1);
                    tc_fence_after();
                    for (int kb = 0; kb < n_kv; ++kb) {
                        const uint32_t y = x + kb, s = y % STAGES, k_tile = stages + s * STAGE_BYTES;
                        mbar_wait(k_full0 + 8 * s, (y / STAGES) & 1);
                        tc_fence_after();
                        const uint32_t d_tmem = tmem_base + S_COL + (y % 2) * BN;
#pragma unroll
                        for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
                            const uint32_t off = (kk / 4) * BOX_BYTES + (kk % 4) * 32;
                            mma_bf16(d_tmem, desc_k_major(q_tile + off), desc_k_major(k_tile + off), IDESC_QK,
                                     kk > 0 ? 1u : 0u);
                        }
                        mma_commit(s_full0 + 8 * (y % 2));
                        if (kb == n_kv - 1) mma_commit(q_empty);   // the item's last use of Q
                        if (kb > 0) pv(y - 1, kb == 1);
                    }
                    pv(x + n_kv - 1, n_kv == 1);
                    x += n_kv;
                    ++items;
                }
            }
        }
        __syncwarp();
    } else if (warp >= 4) {
        const int quarter = warp % 4, row = 32 * quarter + lane;   // TMEM lane = query row of the item
        const uint32_t lane_addr = tmem_base + ((uint32_t)(32 * quarter) << 16);
        const float neg_inf = __int_as_float(0xff800000);
        uint32_t x = 0, items = 0;
        for (int u = blockIdx.x; u < pairs; u += gridDim.x) {
            for (int slot = 0; slot < 2; ++slot) {
                int bh, mb;
                if (!pair_item(u, slot, nmb, bh, mb)) continue;
                const int n_kv = kv_blocks(mb, nmb);
                float m = neg_inf, l = 0.f;
                for (int kb = 0; kb < n_kv; ++kb) {
                    const uint32_t y = x + kb;
                    mbar_wait(s_full0 + 8 * (y % 2), (y / 2) & 1);
                    __syncwarp();   // converged for the warp-collective tcgen05.ld
                    tc_fence_after();
                    uint32_t r[BN];
                    tmem_load_128(lane_addr + S_COL + (y % 2) * BN, r);
                    float* sc = reinterpret_cast<float*>(r);
                    if (CAUSAL && kb == mb) {
#pragma unroll
                        for (int c = 0; c < BN; ++c) if (c > row) sc[c] = neg_inf;
                    }
                    float mx = sc[0];
#pragma unroll
                    for (int c = 1; c < BN; ++c) mx = fmaxf(mx, sc[c]);
                    const float m_new = fmaxf(m, mx * scale);   // finite: the row has an unmasked key
                    const float alpha = exp2_approx(m - m_new);
                    m = m_new;
                    float sum = 0.f;
#pragma unroll
                    for (int c = 0; c < BN; ++c) {
                        sc[c] = exp2_approx(fmaf(sc[c], scale, -m_new));
                        sum += sc[c];
                    }
                    l = l * alpha + sum;
                    if (kb > 0) {
                        // O holds P(y-1) V(y-1) and the P buffer is free; rescale O where a row's max moved.
                        mbar_wait(pv_done, (y - 1) & 1);
                        __syncwarp();
                        tc_fence_after();
                        if (__any_sync(0xffffffffu, alpha != 1.f)) {
#pragma unroll 1
                            for (int c0 = 0; c0 < HEAD_DIM; c0 += 32) {
                                uint32_t ov[32];
                                tmem_load_32(lane_addr + O_COL + c0, ov);
#pragma unroll
                                for (int i = 0; i < 32; ++i) ov[i] = __float_as_uint(__uint_as_float(ov[i]) * alpha);
                                tmem_store_32(lane_addr + O_COL + c0, ov);
                            }
                        }
                    }
#pragma unroll
                    for (int chunk = 0; chunk < BN / 8; ++chunk) {
                        const float* e = sc + 8 * chunk;
                        st_shared_v4(p_tile + swizzled_chunk(row, chunk), pack_bf16x2(e[0], e[1]),
                                     pack_bf16x2(e[2], e[3]), pack_bf16x2(e[4], e[5]), pack_bf16x2(e[6], e[7]));
                    }
                    // P is written (generic proxy) for the MMA (async proxy); S(y) and O are read/updated.
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    tc_fence_before();
                    mbar_arrive(p_full);
                }
                // The item's last O += P V is done: O / l as bf16, and the LSE.
                mbar_wait(pv_done, (x + n_kv - 1) & 1);
                __syncwarp();
                tc_fence_after();
                const float inv = 1.f / l;
                const size_t out_row = (size_t)bh * seq_len + (size_t)mb * BM + row;
                unsigned short* o_row = o_out + out_row * HEAD_DIM;
#pragma unroll 1
                for (int c0 = 0; c0 < HEAD_DIM; c0 += 32) {
                    uint32_t ov[32];
                    tmem_load_32(lane_addr + O_COL + c0, ov);
                    const float* f = reinterpret_cast<const float*>(ov);
#pragma unroll
                    for (int g = 0; g < 4; ++g) {
                        uint4 w;
                        w.x = pack_bf16x2(f[8 * g + 0] * inv, f[8 * g + 1] * inv);
                        w.y = pack_bf16x2(f[8 * g + 2] * inv, f[8 * g + 3] * inv);
                        w.z = pack_bf16x2(f[8 * g + 4] * inv, f[8 * g + 5] * inv);
                        w.w = pack_bf16x2(f[8 * g + 6] * inv, f[8 * g + 7] * inv);
                        *reinterpret_cast<uint4*>(o_row + c0 + 8 * g) = w;
                    }
                }
                lse_out[out_row] = (m + log2f(l)) * LN2;
                tc_fence_before();
                mbar_arrive(o_empty);   // the next item's first O += P V may overwrite O
                x += n_kv;
                ++items;
            }
        }
    }

    // Every warp is done with tensor memory before the allocating warp frees it.
    tc_fence_before();
    __syncthreads();
    tc_fence_after();
    if (warp == 1) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(tmem_base), "r"(TMEM_COLS) : "memory");
    }
}
