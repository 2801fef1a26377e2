// C = A @ B^T (fp32 accumulation, bf16 output) for Blackwell (sm_100a), written by hand in CUDA C++ with inline
// PTX: bf16 operands, or with FP8=1 float8 e4m3 operands and C scaled by scale_a[0] * scale_b[0].
//
// A is (M, K) and B is (N, K), both row-major (K-major operands). One block of 256 threads per SM walks
// output tiles of 128 x BN (persistent grid, grouped order for L2), its warps specialised:
//   warp 0: one thread issues TMA loads of 128 x BK tiles of A and BN x BK tiles of B (BK elements = 128
//     bytes: 64 bf16, 128 fp8) into a ring of
//     STAGES shared-memory stages, each with a `full` mbarrier (its arrival + the stage's bytes) and an
//     `empty` one (completed by tcgen05.commit once the MMAs that read the stage are done);
//   warp 1: allocates 2 x BN columns of tensor memory (two accumulators, so one tile's epilogue overlaps
//     the next tile's MMAs); one thread issues tcgen05.mma (M = 128, N = BN, K = 32 bytes: kind::f16 or
//     kind::f8f6f4, 128-byte swizzled K-major operands in shared memory) and commits each finished
//     accumulator to its `tmem_full`;
//   warps 4-7, the epilogue warpgroup: warp w reads TMEM lanes 32 (w % 4) .. + 31 (rows of the tile) with
//     tcgen05.ld, rounds to bf16, stores to global memory, and releases the accumulator (`tmem_empty`).
// TMA zero-fills out-of-bounds parts of a box, so ragged M, N and K need no masks on the loads; the epilogue
// masks rows past M and 8-column groups past N (N is a multiple of 16).
//
// Compile-time options (defines): FP8 (0: bf16, 1: e4m3), BN (a multiple of 32, 32..256), STAGES, GROUP_M.
// Launch: grid = min(tiles, SMs), block 256, dynamic shared memory = gemm_shared_bytes (see the host).

typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;   // NVRTC has no <cstdint> without extra include paths

#ifndef FP8
#define FP8 0
#endif
#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#if BN % 32 != 0 || BN < 32 || BN > 256
#error "BN must be a multiple of 32 from 32 to 256"
#endif

#if FP8
#define GEMM_KERNEL gemm_fp8_tcgen05
#define SCALE_PARAMS , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#define MMA_KIND "kind::f8f6f4"
#else
#define GEMM_KERNEL gemm_bf16_tcgen05
#define SCALE_PARAMS
#define MMA_KIND "kind::f16"
#endif

constexpr int ELEM = FP8 ? 1 : 2;                    // bytes per operand element
constexpr int BM = 128, BK = 128 / ELEM;             // BK elements = 128 bytes: one swizzle span per row
constexpr int MMA_K = 32 / ELEM;                     // K elements per tcgen05.mma: 32 bytes
constexpr uint32_t A_BYTES = BM * BK * ELEM;
constexpr uint32_t B_BYTES = BN * BK * ELEM;
constexpr uint32_t STAGE_BYTES = A_BYTES + B_BYTES;  // a multiple of 1024: every stage stays 1024-aligned
constexpr uint32_t TMEM_COLS = 2 * BN <= 32 ? 32 : 2 * BN <= 64 ? 64 : 2 * BN <= 128 ? 128 : 2 * BN <= 256 ? 256 : 512;
constexpr uint32_t EPILOGUE_THREADS = 128;

// Instruction descriptor: D fp32 (bits 4-5 = 1), the A and B formats in bits 7-9 and 10-12 (kind::f16: bf16 = 1;
// kind::f8f6f4: e4m3 = 0), both K-major (bits 15, 16 = 0), N >> 3 in bits 17-22, M >> 4 in bits 24-28.
constexpr uint32_t AB_FORMAT = FP8 ? 0u : 1u;
constexpr uint32_t IDESC = (1u << 4) | (AB_FORMAT << 7) | (AB_FORMAT << 10) | ((uint32_t)(BN >> 3) << 17)
                           | ((uint32_t)(BM >> 4) << 24);

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

// Waits until the phase of parity `parity` has completed (the k-th completion is phase k - 1).
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

// Shared-memory descriptor of a K-major operand in the 128-byte swizzle layout TMA wrote: stride offset
// 1024 bytes (8 rows of 128), leading offset unused for this layout (1 by convention), bits 46-48 the fixed
// 0b001, base offset 0 (1024-aligned tiles), bits 61-63 = 2: 128-byte swizzle. A K step of one MMA
// (MMA_K elements) moves the start address by 32 bytes.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr) {
    uint64_t d = 0;
    d |= (uint64_t)((addr & 0x3FFFF) >> 4);
    d |= (uint64_t)(16 >> 4) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 46;
    d |= (uint64_t)2 << 61;
    return d;
}

__device__ __forceinline__ void tc_fence_before() { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void tc_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }

// D[128 x BN] (+)= A[128 x MMA_K] . B[BN x MMA_K]^T with D in tensor memory; accumulate = 0: D = A.B.
__device__ __forceinline__ void mma(uint32_t d_tmem, uint64_t da, uint64_t db, uint32_t accumulate) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "tcgen05.mma.cta_group::1." MMA_KIND " [%0], %1, %2, %3, p;\n\t}"
                 :: "r"(d_tmem), "l"(da), "l"(db), "r"(IDESC), "r"(accumulate) : "memory");
}

// The mbarrier completes once every tcgen05 operation this thread issued before has completed.
__device__ __forceinline__ void mma_commit(uint32_t bar) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                 :: "r"(bar) : "memory");
}

// 32 consecutive fp32 columns of this thread's TMEM lane; valid after tcgen05.wait::ld.
__device__ __forceinline__ void tmem_load_32(uint32_t taddr, uint32_t* r) {
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
                   "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]),
                   "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]),
                   "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
                 : "r"(taddr));
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}

// Two fp32 accumulator words, scaled, rounded to bf16 and packed: `lo` at the lower address.
__device__ __forceinline__ uint32_t pack_bf16x2(uint32_t lo, uint32_t hi, float scale) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(scale * __uint_as_float(hi)), "f"(scale * __uint_as_float(lo)));
    return r;
}

__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int group_tiles = GROUP_M * tiles_n;
    const int first_m = (t / group_tiles) * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = t % group_tiles;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
}

extern "C" __global__ void __launch_bounds__(256, 1)
GEMM_KERNEL(const __grid_constant__ TensorMap a_map, const __grid_constant__ TensorMap b_map,
            unsigned short* __restrict__ c, int m, int n, int k SCALE_PARAMS) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    // Barriers after the stages: full[STAGES], empty[STAGES], tmem_full[2], tmem_empty[2], then the TMEM address.
    const uint32_t full0 = base + STAGES * STAGE_BYTES, empty0 = full0 + 8 * STAGES;
    const uint32_t tmem_full0 = empty0 + 8 * STAGES, tmem_empty0 = tmem_full0 + 16;
    const uint32_t tmem_slot = tmem_empty0 + 16;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int k_iters = (k + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, 1);
        }
        for (int b = 0; b < 2; ++b) {
            mbar_init(tmem_full0 + 8 * b, 1);
            mbar_init(tmem_empty0 + 8 * b, EPILOGUE_THREADS);
        }
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
            uint32_t it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < k_iters; ++kt, ++it) {
                    const uint32_t s = it % STAGES;
                    if (it >= STAGES) mbar_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1);
                    mbar_arrive_expect_tx(full0 + 8 * s, STAGE_BYTES);
                    const uint32_t tile_a = base + s * STAGE_BYTES;
                    tma_load_2d(tile_a, &a_map, kt * BK, tm * BM, full0 + 8 * s);
                    tma_load_2d(tile_a + A_BYTES, &b_map, kt * BK, tn * BN, full0 + 8 * s);
                }
            }
        }
        __syncwarp();
    } else if (warp == 1) {
        if (lane == 0) {
            uint32_t it = 0, local = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++local) {
                const uint32_t buf = local % 2, use = local / 2;
                // The use-th fill of accumulator buf waits for the epilogue's use-th release of it.
                if (use > 0) mbar_wait(tmem_empty0 + 8 * buf, (use - 1) & 1);
                tc_fence_after();
                const uint32_t d_tmem = tmem_base + buf * BN;
                for (int kt = 0; kt < k_iters; ++kt, ++it) {
                    const uint32_t s = it % STAGES;
                    mbar_wait(full0 + 8 * s, (it / STAGES) & 1);
                    tc_fence_after();
                    const uint32_t tile_a = base + s * STAGE_BYTES, tile_b = tile_a + A_BYTES;
#pragma unroll
                    for (int kk = 0; kk < BK / MMA_K; ++kk) {
                        mma(d_tmem, smem_desc_sw128(tile_a + 32 * kk), smem_desc_sw128(tile_b + 32 * kk),
                                 (kt > 0 || kk > 0) ? 1u : 0u);
                    }
                    mma_commit(empty0 + 8 * s);   // the stage is free once these MMAs have read it
                }
                mma_commit(tmem_full0 + 8 * buf);  // the accumulator is complete
            }
        }
        __syncwarp();
    } else if (warp >= 4) {
        const uint32_t quarter = warp % 4;         // this warp's TMEM lanes: 32 * quarter .. + 31
#if FP8
        const float scale = scale_a[0] * scale_b[0];
#else
        constexpr float scale = 1.0f;
#endif
        uint32_t local = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++local) {
            int tm, tn;
            tile_coords(t, tiles_m, tiles_n, tm, tn);
            const uint32_t buf = local % 2, use = local / 2;
            mbar_wait(tmem_full0 + 8 * buf, use & 1);
            tc_fence_after();
            const int row = tm * BM + 32 * quarter + lane;   // D row r is TMEM lane r
            unsigned short* c_row = c + (size_t)row * n;
#pragma unroll 1
            for (int c0 = 0; c0 < BN; c0 += 32) {
                uint32_t r[32];
                tmem_load_32(tmem_base + ((32 * quarter) << 16) + buf * BN + c0, r);
                const int col = tn * BN + c0;
#pragma unroll
                for (int g = 0; g < 4; ++g) {            // 8 columns = one 16-byte store
                    if (row < m && col + 8 * g < n) {
                        uint4 v;
                        v.x = pack_bf16x2(r[8 * g + 0], r[8 * g + 1], scale);
                        v.y = pack_bf16x2(r[8 * g + 2], r[8 * g + 3], scale);
                        v.z = pack_bf16x2(r[8 * g + 4], r[8 * g + 5], scale);
                        v.w = pack_bf16x2(r[8 * g + 6], r[8 * g + 7], scale);
                        *reinterpret_cast<uint4*>(c_row + col + 8 * g) = v;
                    }
                }
            }
            tc_fence_before();
            mbar_arrive(tmem_empty0 + 8 * buf);      // this thread has read its part of the accumulator
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
