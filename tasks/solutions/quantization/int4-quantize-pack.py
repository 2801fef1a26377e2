"""Reference solution for quantization/int4-quantize-pack: quantize two columns, pack them in a byte.

Each program produces a 16 x 128 tile of output bytes: it loads the even and the odd elements of
the matching 16 x 256 input tile (two stride-2 loads that share cache lines), divides each by its
group's scale (div_rn), rounds half to even, clamps to [-8, 7] and packs the even element into the
low nibble and the odd one into the high nibble.
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
def int4_quantize_pack_kernel(w_ptr, scale_ptr, p_ptr, N, KH, GROUP, stride_wn, stride_sn, stride_pn,
                              BLOCK_N: tl.constexpr, BLOCK_P: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    pcols = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)
    mask = (rows[:, None] < N) & (pcols[None, :] < KH)
    even = 2 * pcols[None, :]
    w_row = w_ptr + rows[:, None].to(tl.int64) * stride_wn
    w_lo = tl.load(w_row + even, mask=mask, other=0.0).to(tl.float32)
    w_hi = tl.load(w_row + even + 1, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + rows[:, None].to(tl.int64) * stride_sn + even // GROUP, mask=mask, other=1.0)
    q_lo = tl.minimum(tl.maximum(_round_half_even(tl.math.div_rn(w_lo, scale)), -8.0), 7.0).to(tl.int32)
    q_hi = tl.minimum(tl.maximum(_round_half_even(tl.math.div_rn(w_hi, scale)), -8.0), 7.0).to(tl.int32)
    packed = (q_lo & 0xF) | ((q_hi & 0xF) << 4)
    tl.store(p_ptr + rows[:, None].to(tl.int64) * stride_pn + pcols[None, :], packed.to(tl.uint8), mask=mask)


def int4_quantize_pack(w: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    n, k = w.shape
    packed = torch.empty((n, k // 2), dtype=torch.uint8, device=w.device)
    block_n, block_p = 16, 128
    grid = (triton.cdiv(n, block_n), triton.cdiv(k // 2, block_p))
    int4_quantize_pack_kernel[grid](w, scale, packed, n, k // 2, group_size, w.stride(0), scale.stride(0),
                                    packed.stride(0), BLOCK_N=block_n, BLOCK_P=block_p, num_warps=4)
    return packed
