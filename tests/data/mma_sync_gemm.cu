// C = A B^T in bf16 on mma.sync (m16n8k16), one warp per 16 x 8 tile of C, fragments read straight from
// global memory: test material for the rule that a task requiring wgmma or tcgen05 gives the mark to no
// candidate holding another kind of tensor core. KERNEL is replaced by the kernel's name.
__device__ unsigned pair(const unsigned short* x, int rows, int k, int r, int c) {
  unsigned lo = (r < rows && c < k) ? x[r * k + c] : 0u, hi = (r < rows && c + 1 < k) ? x[r * k + c + 1] : 0u;
  return lo | (hi << 16);
}
__device__ void put(unsigned short* c, int m, int n, int r, int col, float v) {
  unsigned bits = __float_as_uint(v);
  if (r < m && col < n) c[r * n + col] = (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
extern "C" __global__ void KERNEL(const unsigned short* a, const unsigned short* b, unsigned short* c,
                                  int m, int n, int k) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3, row = blockIdx.y * 16 + g, col = blockIdx.x * 8;
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  for (int k0 = 0; k0 < k; k0 += 16) {
    unsigned a0 = pair(a, m, k, row, k0 + 2 * t), a1 = pair(a, m, k, row + 8, k0 + 2 * t);
    unsigned a2 = pair(a, m, k, row, k0 + 2 * t + 8), a3 = pair(a, m, k, row + 8, k0 + 2 * t + 8);
    unsigned b0 = pair(b, n, k, col + g, k0 + 2 * t), b1 = pair(b, n, k, col + g, k0 + 2 * t + 8);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  put(c, m, n, row, col + 2 * t, d0); put(c, m, n, row, col + 2 * t + 1, d1);
  put(c, m, n, row + 8, col + 2 * t, d2); put(c, m, n, row + 8, col + 2 * t + 1, d3);
}
