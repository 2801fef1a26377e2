"""Reference solution for quantization/quantize-dynamic-per-group: one group per row of a 2-D tile.

x is contiguous and group_size divides K, so group g is the flat range [g * G, (g + 1) * G): a
program loads BLOCK groups as a BLOCK x G tile, takes max |x| along each row of the tile,
computes scale = max(amax, 1e-12) / QMAX and quantizes the tile, all in registers; the scales go
to the flat (M * K / G) scale array. Divisions are correctly rounded (div_rn). The fp8 bytes are
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
def quantize_group_dyn_kernel(x_ptr, q_ptr, scale_ptr, n_groups, QMAX: tl.constexpr, FP8: tl.constexpr,
                              GROUP: tl.constexpr, BLOCK: tl.constexpr):
    groups = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = groups[:, None].to(tl.int64) * GROUP + tl.arange(0, GROUP)[None, :]
    mask = groups[:, None] < n_groups
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-12)
    scale = tl.math.div_rn(amax, tl.zeros_like(amax) + QMAX)
    tl.store(scale_ptr + groups, scale, mask=groups < n_groups)
    y = tl.math.div_rn(x, tl.zeros_like(x) + scale[:, None])
    if FP8:
        q = _fp8e4m3_bits(tl.minimum(tl.maximum(y, -448.0), 448.0))
    else:
        q = tl.minimum(tl.maximum(_round_half_even(y), -128.0), 127.0).to(tl.int8)
    tl.store(q_ptr + offs, q, mask=mask)


def quantize_dynamic_per_group(x: torch.Tensor, group_size: int,
                               qdtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    m, k = x.shape
    q = torch.empty((m, k), dtype=qdtype, device=x.device)
    scale = torch.empty((m, k // group_size), dtype=torch.float32, device=x.device)
    fp8 = qdtype == torch.float8_e4m3fn
    out = q.view(torch.uint8) if fp8 else q  # fp8 codes are written as bytes
    n_groups = m * (k // group_size)
    block = max(1, 4096 // group_size)
    quantize_group_dyn_kernel[(triton.cdiv(n_groups, block),)](x, out, scale, n_groups,
                                                               QMAX=448.0 if fp8 else 127.0, FP8=fp8,
                                                               GROUP=group_size, BLOCK=block, num_warps=4)
    return q, scale
