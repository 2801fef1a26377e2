"""Reference solution for random/stochastic-round: out = scale * floor(x / scale + u), u drawn per
element with tl.rand(seed, flat index); rounds up with probability frac(x / scale)."""

import torch
import triton
import triton.language as tl


@triton.jit
def stochastic_round_kernel(x_ptr, out_ptr, numel, scale, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    t = tl.load(x_ptr + offs, mask=mask, other=0.0) / scale
    k = tl.floor(t + tl.rand(seed, offs))
    tl.store(out_ptr + offs, k * scale, mask=mask)


def stochastic_round(x: torch.Tensor, scale: float, seed: int) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    numel = x.numel()
    block = 4096
    stochastic_round_kernel[(triton.cdiv(numel, block),)](x, out, numel, scale, seed, BLOCK=block,
                                                          num_warps=8)
    return out
