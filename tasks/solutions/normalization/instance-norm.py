"""Reference solution for normalization/instance-norm: one program per (sample, channel) plane.

Mean, then the variance around it, then the affine output; the plane is contiguous. A plane of up to
ONE_BLOCK[0] elements is loaded once into registers (ONE_BLOCK[1] elements a thread, at most 16 warps)
and all three steps use it: the bench planes (128 * 128, 32 or 64 KiB) were read three times before,
the later sweeps missing L2 with hundreds of planes in flight. Larger planes loop over BLOCK elements.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]
ONE_BLOCK: Tiles = (16384, 16)
"""(largest plane held in registers, elements a thread)."""
LOOP: Tiles = (4096, 8)
"""(BLOCK, num_warps) for larger planes."""


@triton.jit
def instance_norm_plane_kernel(x_ptr, w_ptr, b_ptr, out_ptr, hw, channels, eps, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    c = plane % channels
    base = plane.to(tl.int64) * hw
    offs = tl.arange(0, BLOCK)
    mask = offs < hw
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / hw
    diff = tl.where(mask, x - mean, 0.0)
    scale = tl.load(w_ptr + c).to(tl.float32) / tl.sqrt(tl.sum(diff * diff, axis=0) / hw + eps)
    shift = tl.load(b_ptr + c).to(tl.float32)
    tl.store(out_ptr + base + offs, (diff * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def instance_norm_loop_kernel(x_ptr, w_ptr, b_ptr, out_ptr, hw, channels, eps, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    c = plane % channels
    base = plane.to(tl.int64) * hw
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, hw, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + base + offs, mask=offs < hw, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / hw
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, hw, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < hw
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    scale = tl.load(w_ptr + c).to(tl.float32) / tl.sqrt(tl.sum(acc, axis=0) / hw + eps)
    shift = tl.load(b_ptr + c).to(tl.float32)
    for start in range(0, hw, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < hw
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + offs, ((x - mean) * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


def instance_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                  eps: float = 1e-5) -> torch.Tensor:
    n, c, h, w = x.shape
    out = torch.empty_like(x)
    hw = h * w
    longest, per_thread = ONE_BLOCK
    if hw <= longest:
        block = triton.next_power_of_2(hw)
        warps = min(16, max(4, block // (32 * per_thread)))
        instance_norm_plane_kernel[(n * c,)](x, weight, bias, out, hw, c, eps, BLOCK=block, num_warps=warps)
        return out
    block, warps = LOOP
    instance_norm_loop_kernel[(n * c,)](x, weight, bias, out, hw, c, eps, BLOCK=block, num_warps=warps)
    return out
