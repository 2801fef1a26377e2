// C = A B^T in bf16 with no floating-point arithmetic in the product: each multiply-add works on the
// operands' bits (8-bit mantissas multiplied as integers, exponents added, the product shifted into a 64-bit
// fixed-point sum at 2^-40). Test material for the rule that counts every instruction beside the tensor-core
// ones: a product emulated this way runs several integer instructions per flop.
extern "C" __global__ void int_gemm(const unsigned short* a, const unsigned short* b, unsigned short* c,
                                    int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  long long acc = 0;
  for (int i = 0; i < k; ++i) {
    unsigned x = a[row * k + i], y = b[col * k + i];
    int ex = (x >> 7) & 0xff, ey = (y >> 7) & 0xff;
    if (ex == 0 || ey == 0) continue;  // zero (bf16 subnormals are below the sum's resolution)
    long long p = (long long)(((x & 0x7fu) | 0x80u) * ((y & 0x7fu) | 0x80u));
    int shift = ex + ey - 254 - 14 + 40;
    p = shift >= 0 ? p << shift : p >> -shift;
    acc += ((x ^ y) & 0x8000u) ? -p : p;
  }
  unsigned bits = __float_as_uint(__ll2float_rn(acc) * 0x1p-40f);
  c[row * n + col] = (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
