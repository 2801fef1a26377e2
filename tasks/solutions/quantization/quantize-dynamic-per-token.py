"""Reference solution for quantization/quantize-dynamic-per-token: two passes over each row.

Each program owns BLOCK_M rows: the first pass streams them to find max |x| per row, the second
re-reads them (from L2) and quantizes with scale = max(amax, 1e-12) / QMAX; both divisions are
correctly rounded (div_rn). The fp8 bytes are built with integer arithmetic instead of
.to(tl.float8e4nv): identical to the hardware's cvt.rn.satfinite on a GPU, and correct in Triton's
CPU interpreter, whose fp32 -> fp8 conversion is wrong.
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
def quantize_token_kernel(x_ptr, q_ptr, scale_ptr, M, K, stride_xm, stride_qm, QMAX: tl.constexpr,
                          FP8: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs = tl.arange(0, BLOCK_K)
    row_mask = rows < M
    x_rows = x_ptr + rows[:, None].to(tl.int64) * stride_xm
    amax = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        cols = k + offs
        x = tl.load(x_rows + cols[None, :], mask=row_mask[:, None] & (cols[None, :] < K), other=0.0)
        amax = tl.maximum(amax, tl.abs(x.to(tl.float32)))
    amax = tl.maximum(tl.max(amax, axis=1), 1e-12)
    scale = tl.math.div_rn(amax, tl.zeros_like(amax) + QMAX)
    tl.store(scale_ptr + rows, scale, mask=row_mask)
    q_rows = q_ptr + rows[:, None].to(tl.int64) * stride_qm
    for k in range(0, K, BLOCK_K):
        cols = k + offs
        mask = row_mask[:, None] & (cols[None, :] < K)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        y = tl.math.div_rn(x, tl.zeros_like(x) + scale[:, None])
        if FP8:
            q = _fp8e4m3_bits(tl.minimum(tl.maximum(y, -448.0), 448.0))
        else:
            q = tl.minimum(tl.maximum(_round_half_even(y), -128.0), 127.0).to(tl.int8)
        tl.store(q_rows + cols[None, :], q, mask=mask)


def quantize_dynamic_per_token(x: torch.Tensor, qdtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    m, k = x.shape
    q = torch.empty((m, k), dtype=qdtype, device=x.device)
    scale = torch.empty((m,), dtype=torch.float32, device=x.device)
    fp8 = qdtype == torch.float8_e4m3fn
    out = q.view(torch.uint8) if fp8 else q  # fp8 codes are written as bytes
    block_m, block_k = 4, 512
    quantize_token_kernel[(triton.cdiv(m, block_m),)](x, out, scale, m, k, x.stride(0), out.stride(0),
                                                      QMAX=448.0 if fp8 else 127.0, FP8=fp8, BLOCK_M=block_m,
                                                      BLOCK_K=block_k, num_warps=4)
    return q, scale
