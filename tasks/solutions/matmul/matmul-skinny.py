"""Reference solution for matmul/matmul-skinny: a weight-streaming GEMM for a handful of rows.

With M <= 64 the weight (N, K) is the traffic, so each program covers all M rows (a tile of
16..64 rows, the smallest tl.dot allows) and a narrow slice of 64 output columns, streaming its
64 x K slice of the weight once in 128-wide chunks. Narrow slices give N/64 programs: hundreds at
bench sizes, enough to keep every SM's loads in flight.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def skinny_kernel(x_ptr, w_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                  stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_tile = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_tile = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        x = tl.load(x_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_tile, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_tile += BLOCK_K * stride_xk
        w_tile += BLOCK_K * stride_wk
    out_tile = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_tile, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_skinny(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_m = max(16, triton.next_power_of_2(m))
    block_n, block_k = 64, 128
    grid = (triton.cdiv(n, block_n),)
    skinny_kernel[grid](x, weight, out, m, n, k, x.stride(0), x.stride(1), weight.stride(0), weight.stride(1),
                        out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                        num_warps=4, num_stages=4)
    return out
