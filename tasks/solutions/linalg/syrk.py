"""Reference solution for linalg/syrk: lower-triangle tiles only, each mirrored into the upper half.

The grid enumerates the T(T+1)/2 tile pairs (i >= j) of a T x T tiling; each program computes the
(i, j) tile of a @ a^T (both operands are row blocks of a, read in place), applies beta * c + alpha *
acc in float32 and stores it, and for i != j also stores the transposed tile at (j, i), combined
with c's (j, i) tile. That halves the GEMM work. float32 inputs use tl.dot(..., input_precision=
"ieee"); 16-bit inputs use 128x128x64 tiles, 8 warps, 3 stages at bench sizes (wgmma on sm_90a).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def syrk_kernel(c_ptr, a_ptr, out_ptr, N, K, alpha, beta, stride_cm, stride_cn, stride_an, stride_ak,
                stride_om, stride_on, IEEE: tl.constexpr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    # Tile pair (i, j) with i >= j from the linear index pid = i (i + 1) / 2 + j.
    i = ((tl.sqrt(8.0 * pid.to(tl.float32) + 1.0) - 1.0) * 0.5).to(tl.int32)
    i = tl.where((i + 1) * (i + 2) // 2 <= pid, i + 1, i)
    i = tl.where(i * (i + 1) // 2 > pid, i - 1, i)
    j = pid - i * (i + 1) // 2

    offs_i = i * BLOCK + tl.arange(0, BLOCK)
    offs_j = j * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    a_i = a_ptr + offs_i[:, None].to(tl.int64) * stride_an + offs_k[None, :] * stride_ak
    a_j = a_ptr + offs_k[:, None] * stride_ak + offs_j[None, :].to(tl.int64) * stride_an
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        x = tl.load(a_i, mask=(offs_i[:, None] < N) & (offs_k[None, :] < k_left), other=0.0)
        y = tl.load(a_j, mask=(offs_k[:, None] < k_left) & (offs_j[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(x, y, acc, input_precision="ieee")
        else:
            acc = tl.dot(x, y, acc)
        a_i += BLOCK_K * stride_ak
        a_j += BLOCK_K * stride_ak
    mask = (offs_i[:, None] < N) & (offs_j[None, :] < N)
    c = tl.load(c_ptr + offs_i[:, None] * stride_cm + offs_j[None, :] * stride_cn, mask=mask, other=0.0)
    out = alpha * acc + beta * c.to(tl.float32)
    out_tile = out_ptr + offs_i[:, None] * stride_om + offs_j[None, :] * stride_on
    tl.store(out_tile, out.to(out_ptr.dtype.element_ty), mask=mask)
    if i != j:
        mask_t = (offs_j[:, None] < N) & (offs_i[None, :] < N)
        c_t = tl.load(c_ptr + offs_j[:, None] * stride_cm + offs_i[None, :] * stride_cn, mask=mask_t,
                      other=0.0)
        out_t = alpha * tl.trans(acc) + beta * c_t.to(tl.float32)
        tl.store(out_ptr + offs_j[:, None] * stride_om + offs_i[None, :] * stride_on,
                 out_t.to(out_ptr.dtype.element_ty), mask=mask_t)


def syrk(c: torch.Tensor, a: torch.Tensor, beta: float = 1.0, alpha: float = 1.0) -> torch.Tensor:
    n, k = a.shape
    out = torch.empty((n, n), dtype=a.dtype, device=a.device)
    ieee = a.dtype == torch.float32
    if n >= 1024:
        block, block_k, warps, stages = 128, (32 if ieee else 64), 8, 3
    else:
        block, block_k, warps, stages = 64, 32, 4, 3
    tiles = triton.cdiv(n, block)
    grid = (tiles * (tiles + 1) // 2,)
    syrk_kernel[grid](c, a, out, n, k, float(alpha), float(beta), c.stride(0), c.stride(1), a.stride(0),
                      a.stride(1), out.stride(0), out.stride(1), IEEE=ieee, BLOCK=block, BLOCK_K=block_k,
                      num_warps=warps, num_stages=stages)
    return out
