"""Reference solution for quantization/quantize-per-group: a 2-D tiled quantizer with group scales.

Each program converts a 16 x 256 tile; element (i, j) divides by scale[i, j // group_size]
(repeated loads of one scale hit in L1). One correctly rounded division (div_rn), then
round-half-even and clamp for int8, or clamp and an fp8 e4m3 encoding for float8. The fp8 bytes are
built with integer arithmetic instead of .to(tl.float8e4nv): identical to the hardware's
cvt.rn.satfinite on a GPU, and correct in Triton's CPU interpreter, whose fp32 -> fp8 conversion
is wrong.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _round_half_even(y):
    f = tl.math.floor(y)
    d = y - f
    half = f * 0.5
    return f + tl.where((d > 0.5) | ((d == 0.5) & (tl.math.floor(half) != half)), 1.0, 0.0)


@triton.jit
def _fp8e4m3_bits(y):
    """Bits of y (float32, |y| <= 448) rounded to float8_e4m3fn, nearest even."""
    bits = y.to(tl.int32, bitcast=True)
    sign = (bits >> 24) & 0x80
    mag = bits & 0x7FFFFFFF
    # |y| >= 2^-6: keep 3 mantissa bits, round to nearest even, rebias the exponent (127 -> 7).
    normal = ((mag + 0x7FFFF + ((mag >> 20) & 1)) >> 20) - 960
    # |y| < 2^-6: subnormal multiples of 2^-9.
    sub = _round_half_even(tl.abs(y) * 512.0).to(tl.int32)
    return (tl.where(mag < 0x3C800000, sub, normal) | sign).to(tl.uint8)


@triton.jit
def quantize_group_kernel(x_ptr, scale_ptr, q_ptr, M, K, GROUP, stride_xm, stride_sm, stride_qm,
                          FP8: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < M) & (cols[None, :] < K)
    x = tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_xm + cols[None, :], mask=mask, other=0.0)
    scale = tl.load(scale_ptr + rows[:, None].to(tl.int64) * stride_sm + cols[None, :] // GROUP, mask=mask,
                    other=1.0)
    y = tl.math.div_rn(x.to(tl.float32), scale)
    if FP8:
        q = _fp8e4m3_bits(tl.minimum(tl.maximum(y, -448.0), 448.0))
    else:
        q = tl.minimum(tl.maximum(_round_half_even(y), -128.0), 127.0).to(tl.int8)
    tl.store(q_ptr + rows[:, None].to(tl.int64) * stride_qm + cols[None, :], q, mask=mask)


def quantize_per_group(x: torch.Tensor, scale: torch.Tensor, group_size: int,
                       qdtype: torch.dtype) -> torch.Tensor:
    m, k = x.shape
    q = torch.empty((m, k), dtype=qdtype, device=x.device)
    fp8 = qdtype == torch.float8_e4m3fn
    out = q.view(torch.uint8) if fp8 else q  # fp8 codes are written as bytes
    block_m, block_k = 16, 256
    grid = (triton.cdiv(m, block_m), triton.cdiv(k, block_k))
    quantize_group_kernel[grid](x, scale, out, m, k, group_size, x.stride(0), scale.stride(0), out.stride(0),
                                FP8=fp8, BLOCK_M=block_m, BLOCK_K=block_k, num_warps=4)
    return q
