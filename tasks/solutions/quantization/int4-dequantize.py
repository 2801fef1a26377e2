"""Reference solution for quantization/int4-dequantize: unpack nibbles and scale, one output tile per program.

Output element j of a row reads byte j // 2 (each byte is loaded for two neighbouring outputs; the
second load hits L1), shifts by 4 * (j % 2), sign-extends the nibble ((v ^ 8) - 8), multiplies by
its group's scale in float32 and rounds once to the scale's dtype.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def int4_dequantize_kernel(p_ptr, scale_ptr, out_ptr, N, K, GROUP, stride_pn, stride_sn, stride_on,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < N) & (cols[None, :] < K)
    byte = tl.load(p_ptr + rows[:, None].to(tl.int64) * stride_pn + cols[None, :] // 2, mask=mask, other=0)
    nibble = (byte.to(tl.int32) >> ((cols[None, :] % 2) * 4)) & 0xF
    q = (nibble ^ 8) - 8
    scale = tl.load(scale_ptr + rows[:, None].to(tl.int64) * stride_sn + cols[None, :] // GROUP, mask=mask,
                    other=0.0)
    out = q.to(tl.float32) * scale.to(tl.float32)
    out_tile = out_ptr + rows[:, None].to(tl.int64) * stride_on + cols[None, :]
    tl.store(out_tile, out.to(out_ptr.dtype.element_ty), mask=mask)


def int4_dequantize(packed: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    n, kh = packed.shape
    k = 2 * kh
    out = torch.empty((n, k), dtype=scale.dtype, device=packed.device)
    block_n, block_k = 16, 256
    grid = (triton.cdiv(n, block_n), triton.cdiv(k, block_k))
    int4_dequantize_kernel[grid](packed, scale, out, n, k, group_size, packed.stride(0), scale.stride(0),
                                 out.stride(0), BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4)
    return out
