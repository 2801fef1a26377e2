"""Reference solution for quantization/dequantize-per-channel: a 2-D tiled dequantizer with row scales.

Each program converts a BLOCK_M x BLOCK_K tile of int8 or fp8 codes to float32 (exact for both),
multiplies each row by its scale (a BLOCK_M x 1 tile, one load per row) and rounds once to the output dtype on
the store. The work is 1 byte read and 2-4 bytes written per element, so the kernel is a copy: 16-byte
loads of the codes, no index division, and no masks when the tiles divide the tensor (EVEN). At the
bench shapes (32768 x 16384, 1.6 GB moved) the copy roofline is 0.38 ms on the H200.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int, int]
"""(BLOCK_M, BLOCK_K, num_warps)."""
TILES: Tiles = (16, 1024, 8)


@triton.jit
def dequantize_channel_kernel(q_ptr, scale_ptr, out_ptr, M, K, stride_qm, stride_om, BLOCK_M: tl.constexpr,
                              BLOCK_K: tl.constexpr, EVEN: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    q_tile = q_ptr + rows[:, None].to(tl.int64) * stride_qm + cols[None, :]
    out_tile = out_ptr + rows[:, None].to(tl.int64) * stride_om + cols[None, :]
    if EVEN:
        scale = tl.load(scale_ptr + rows[:, None])
        q = tl.load(q_tile)
        tl.store(out_tile, (q.to(tl.float32) * scale).to(out_ptr.dtype.element_ty))
    else:
        mask = (rows[:, None] < M) & (cols[None, :] < K)
        scale = tl.load(scale_ptr + rows[:, None], mask=rows[:, None] < M, other=0.0)
        q = tl.load(q_tile, mask=mask)
        tl.store(out_tile, (q.to(tl.float32) * scale).to(out_ptr.dtype.element_ty), mask=mask)


def dequantize_per_channel(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    m, k = q.shape
    out = torch.empty((m, k), dtype=out_dtype, device=q.device)
    block_m, block_k, warps = TILES
    block_k = min(block_k, max(16, triton.next_power_of_2(k)))
    even = m % block_m == 0 and k % block_k == 0
    grid = (triton.cdiv(m, block_m), triton.cdiv(k, block_k))
    dequantize_channel_kernel[grid](q, scale, out, m, k, q.stride(0), out.stride(0), BLOCK_M=block_m,
                                    BLOCK_K=block_k, EVEN=even, num_warps=warps)
    return out
