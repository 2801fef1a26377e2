"""Reference solution for convolution/conv1d: an implicit GEMM (output positions x output channels,
reducing over taps and blocks of input channels) on tensor cores."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, C, L, CO, OL, K, stride, pad,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < N * OL
    n_ok = offs_n < CO
    img = offs_m // OL
    o = offs_m % OL
    x_img = img.to(tl.int64) * C * L
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in range(0, K):
        pos = o * stride - pad + k
        pos_ok = m_ok & (pos >= 0) & (pos < L)
        for c0 in range(0, C, BLOCK_K):
            ck = c0 + tl.arange(0, BLOCK_K)
            c_ok = ck < C
            a = tl.load(x_ptr + x_img[:, None] + ck[None, :].to(tl.int64) * L + pos[:, None],
                        mask=pos_ok[:, None] & c_ok[None, :], other=0.0)
            b = tl.load(w_ptr + (offs_n[None, :] * C + ck[:, None]) * K + k,
                        mask=c_ok[:, None] & n_ok[None, :],
                        other=0.0)
            acc = tl.dot(a, b, acc)
    acc += tl.load(b_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    out = out_ptr + (img[:, None].to(tl.int64) * CO + offs_n[None, :]) * OL + o[:, None]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
           padding: int) -> torch.Tensor:
    n, c, length = x.shape
    co, _, k = weight.shape
    ol = (length + 2 * padding - k) // stride + 1
    x, weight = x.contiguous(), weight.contiguous()
    out = torch.empty((n, co, ol), dtype=x.dtype, device=x.device)
    m = n * ol
    block_m = 128 if m >= 8192 else 64
    block_n = 128 if co >= 128 and m >= 8192 else 64 if co > 32 else 32
    block_k = 64 if c >= 64 else 32 if c > 16 else 16
    warps = 8 if block_m * block_n >= 128 * 128 else 4
    grid = (triton.cdiv(m, block_m), triton.cdiv(co, block_n))
    conv1d_kernel[grid](x, weight, bias, out, n, c, length, co, ol, k, stride, padding, BLOCK_M=block_m,
                        BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=3)
    return out
