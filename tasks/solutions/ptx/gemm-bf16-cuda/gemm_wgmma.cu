// C = A @ B^T (fp32 accumulation, bf16 output) for Hopper (sm_90a), written by hand in CUDA C++ with inline PTX:
// bf16 operands, or with FP8=1 float8 e4m3 operands and C scaled by scale_a[0] * scale_b[0].
//
// A is (M, K) and B is (N, K), both row-major: K-major operands, as wgmma takes them without transposes.
// One block of 384 threads per SM walks output tiles of 128 x BN (persistent grid, grouped order for L2):
//   warpgroup 0, the producer, gives registers away (setmaxnreg.dec) and one of its threads issues
//   TMA loads of 128 x BK tiles of A and BN x BK tiles of B (BK elements = 128 bytes: 64 bf16, 128 fp8)
//   into a ring of STAGES shared-memory stages,
//   each guarded by a `full` mbarrier (one arrival + the stage's bytes) and an `empty` mbarrier
//   (one arrival per consumer warp);
//   warpgroups 1 and 2, the consumers, claim the registers (setmaxnreg.inc), each multiplies its 64 rows
//   of the A tile by the whole B tile with wgmma m64nBNk16 (bf16) or m64nBNk32 (e4m3; both operands from
//   shared memory, 128-byte swizzle), and writes its 64 x BN accumulator as bf16 straight from registers.
// Each wgmma takes 32 bytes of K, so the two element types share every byte offset, descriptor and stage.
// TMA fills out-of-bounds parts of a box with zeros, so ragged M, N and K need no masks on the loads;
// the epilogue masks rows past M and columns past N (N is a multiple of 16, so column pairs never straddle).
//
// Compile-time options (defines): FP8 (0: bf16, 1: e4m3), BN (128 or 256), STAGES, INFLIGHT (wgmma groups
// left pending while the next stage is awaited: 0 or 1), GROUP_M (tile rows per group of the L2-friendly order).
// Launch: grid = min(tiles, SMs), block 384, dynamic shared memory = gemm_shared_bytes (see the host).

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
#ifndef INFLIGHT
#define INFLIGHT 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#if BN != 128 && BN != 256
#error "BN must be 128 or 256"
#endif

#if FP8
#define GEMM_KERNEL gemm_fp8_wgmma
#define SCALE_PARAMS , const float* __restrict__ scale_a, const float* __restrict__ scale_b
// e4m3 operands take no transpose flags: scale-d, then scale-a and scale-b
#define WGMMA_OP(n) "wgmma.mma_async.sync.aligned.m64n" #n "k32.f32.e4m3.e4m3 "
#define WGMMA_FLAGS ", 1, 1;"
#else
#define GEMM_KERNEL gemm_bf16_wgmma
#define SCALE_PARAMS
#define WGMMA_OP(n) "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 "
#define WGMMA_FLAGS ", 1, 1, 0, 0;"
#endif

constexpr int ELEM = FP8 ? 1 : 2;                  // bytes per operand element
constexpr int BM = 128, BK = 128 / ELEM;           // BK elements = 128 bytes: one 128-byte swizzle span per row
constexpr int MMA_K = 32 / ELEM;                   // K elements per wgmma: 32 bytes
constexpr uint32_t A_BYTES = BM * BK * ELEM;       // 16 KB
constexpr uint32_t B_BYTES = BN * BK * ELEM;       // 16 or 32 KB
constexpr uint32_t STAGE_BYTES = A_BYTES + B_BYTES;  // a multiple of 1024: every stage stays 1024-aligned
constexpr uint32_t CONSUMER_WARPS = 8;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;  // 40 * 128 + 232 * 256 = 64512 <= 65536

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

// A 2D TMA load of the box at (x innermost, y) into shared memory; completes `bytes` on the mbarrier.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

// wgmma matrix descriptor of a K-major operand in the 128-byte swizzle layout TMA wrote: rows of 128 bytes,
// 8-row atoms of 1024 bytes (the stride offset); the leading offset is unused for this layout (1 by
// convention); base offset 0 because every tile starts 1024-aligned; bits 62-63 = 1: 128-byte swizzle.
// Stepping K by one wgmma (MMA_K elements) inside the row is a 32-byte move of the start address.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr) {
    uint64_t d = 0;
    d |= (uint64_t)((addr & 0x3FFFF) >> 4);
    d |= (uint64_t)(16 >> 4) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

// Two fp32 values rounded to bf16 and packed: `lo` at the lower address (cvt puts its first source high).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// D[64 x N] (+)= A[64 x MMA_K] . B[N x MMA_K]^T; d holds this thread's N / 2 accumulators. scale_d = 0: D = A.B.
__device__ __forceinline__ void wgmma_m64n128(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
        WGMMA_OP(128)
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p" WGMMA_FLAGS "\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n256(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
        WGMMA_OP(256)
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p" WGMMA_FLAGS "\n\t}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_tile(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
#if BN == 256
    wgmma_m64n256(d, da, db, scale_d);
#else
    wgmma_m64n128(d, da, db, scale_d);
#endif
}

// Tile t of the grouped order: GROUP_M tile rows advance together across the columns, so the blocks of
// one wave share A rows and B columns in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int group_tiles = GROUP_M * tiles_n;
    const int first_m = (t / group_tiles) * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = t % group_tiles;
    tm = first_m + in_group % rows;
    tn = in_group / rows;
}

extern "C" __global__ void __launch_bounds__(384, 1)
GEMM_KERNEL(const __grid_constant__ TensorMap a_map, const __grid_constant__ TensorMap b_map,
            unsigned short* __restrict__ c, int m, int n, int k SCALE_PARAMS) {
    extern __shared__ unsigned char smem_raw[];
    // Stages from a 1024-aligned base (the 128-byte swizzle's atom), the barriers after them.
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t bars = base + STAGES * STAGE_BYTES;
    const int warpgroup = threadIdx.x / 128;
    const int tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int k_iters = (k + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);                             // full: the producer's arrive + bytes
            mbar_init(bars + 8 * (STAGES + s), CONSUMER_WARPS);     // empty: one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (threadIdx.x == 0) {
            uint32_t it = 0;   // k-steps issued by this block over all its tiles: stage it % STAGES
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < k_iters; ++kt, ++it) {
                    const uint32_t s = it % STAGES;
                    const uint32_t full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
                    // The (it / STAGES)-th refill of stage s waits for the consumers' (it / STAGES)-th release.
                    if (it >= STAGES) mbar_wait(empty, ((it / STAGES) - 1) & 1);
                    mbar_arrive_expect_tx(full, STAGE_BYTES);   // whole boxes count, zero-filled parts too
                    const uint32_t tile_a = base + s * STAGE_BYTES;
                    tma_load_2d(tile_a, &a_map, kt * BK, tm * BM, full);
                    tma_load_2d(tile_a + A_BYTES, &b_map, kt * BK, tn * BN, full);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));
        const int consumer = warpgroup - 1;              // rows 64 * consumer .. + 63 of each tile
        const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
#if FP8
        const float scale = scale_a[0] * scale_b[0];
#else
        constexpr float scale = 1.0f;
#endif
        float d[BN / 2];
        uint32_t it = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int tm, tn;
            tile_coords(t, tiles_m, tiles_n, tm, tn);
            for (int kt = 0; kt < k_iters; ++kt, ++it) {
                const uint32_t s = it % STAGES;
                mbar_wait(bars + 8 * s, (it / STAGES) & 1);     // the stage's (it / STAGES)-th fill landed
                const uint32_t tile_a = base + s * STAGE_BYTES + consumer * (64 * BK * ELEM);
                const uint32_t tile_b = base + s * STAGE_BYTES + A_BYTES;
                wgmma_fence();   // the accumulators were last touched by the epilogue or earlier wgmma
#pragma unroll
                for (int kk = 0; kk < BK / MMA_K; ++kk) {
                    wgmma_tile(d, smem_desc_sw128(tile_a + 32 * kk), smem_desc_sw128(tile_b + 32 * kk),
                               (kt > 0 || kk > 0) ? 1u : 0u);
                }
                wgmma_commit();
#if INFLIGHT
                // Keep this step's group in flight; the previous step's group is done: free its stage.
                wgmma_wait<1>();
                if (kt > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
#else
                wgmma_wait<0>();
                if (lane == 0) mbar_arrive(bars + 8 * (STAGES + s));
#endif
                __syncwarp();
            }
#if INFLIGHT
            wgmma_wait<0>();
            if (k_iters > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
            __syncwarp();
#endif
            // Accumulator layout of m64nN (either K): warp w holds rows 16w + lane / 4 and + 8; for each 8-column
            // block j, d[4j], d[4j + 1] are columns 8j + 2 (lane % 4) + 0, 1 of the first row and
            // d[4j + 2], d[4j + 3] the same columns of the second.
            const int row = tm * BM + consumer * 64 + warp * 16 + lane / 4;
            const int col0 = tn * BN + 2 * (lane % 4);
            unsigned short* c0 = c + (size_t)row * n;
            unsigned short* c8 = c0 + (size_t)8 * n;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int col = col0 + 8 * j;
                if (col < n) {
                    if (row < m)
                        *reinterpret_cast<uint32_t*>(c0 + col) = pack_bf16x2(scale * d[4 * j], scale * d[4 * j + 1]);
                    if (row + 8 < m)
                        *reinterpret_cast<uint32_t*>(c8 + col) = pack_bf16x2(scale * d[4 * j + 2], scale * d[4 * j + 3]);
                }
            }
        }
    }
}
