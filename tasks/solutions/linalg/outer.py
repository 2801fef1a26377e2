"""Reference solution for linalg/outer: a store-bound 2-D tile kernel.

Each program loads BLOCK_M entries of x and BLOCK_N of y (both stay in L2), multiplies them in
float32 and writes one BLOCK_M x BLOCK_N tile of the output with row-contiguous, vectorised stores.
The product of two 16-bit values is exact in float32, so the one rounding at the store matches
torch.outer.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, M, N, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    tile = x[:, None] * y[None, :]
    out = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
    tl.store(out, tile.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def outer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, n = x.shape[0], y.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_m, block_n = 32, 256
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    outer_kernel[grid](x, y, out, m, n, out.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
    return out
