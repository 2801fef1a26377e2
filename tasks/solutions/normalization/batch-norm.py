"""Reference solution for normalization/batch-norm (inference): a per-channel affine map.

Programs cover (plane, chunk of H * W); the channel's statistics are four scalar loads per program, and
the map is applied as (x - mean) * (weight / sqrt(var + eps)) + bias. A plane is cut into the fewest
chunks of at most TILE[0] elements, of equal length (a multiple of 16, so every chunk starts 16-byte
aligned): a 56 * 56 plane is one program moving 6-12 KiB, not four of which the last holds 64 elements,
and a 112 * 112 plane four equal programs instead of thirteen.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
TILE: Tiles = (8192, 8)
"""(largest chunk of a plane a program maps, num_warps for chunks over 1024 elements)."""


@triton.jit
def batch_norm_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, hw, channels, chunk, eps,
                      BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    c = plane % channels
    mean = tl.load(mean_ptr + c).to(tl.float32)
    var = tl.load(var_ptr + c).to(tl.float32)
    scale = tl.load(w_ptr + c).to(tl.float32) / tl.sqrt(var + eps)
    shift = tl.load(b_ptr + c).to(tl.float32)
    start = tl.program_id(1) * chunk
    offs = tl.arange(0, BLOCK)
    mask = offs < tl.minimum(chunk, hw - start)
    base = plane.to(tl.int64) * hw + start
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, ((x - mean) * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


def batch_norm(x: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor,
               weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    n, c, h, w = x.shape
    out = torch.empty_like(x)
    hw = h * w
    largest, warps = TILE
    chunks = triton.cdiv(hw, largest)
    chunk = triton.cdiv(triton.cdiv(hw, chunks), 16) * 16
    chunks = triton.cdiv(hw, chunk)
    block = triton.next_power_of_2(chunk)
    batch_norm_kernel[(n * c, chunks)](x, running_mean, running_var, weight, bias, out, hw, c, chunk, eps,
                                       BLOCK=block, num_warps=warps if block > 1024 else 4)
    return out
