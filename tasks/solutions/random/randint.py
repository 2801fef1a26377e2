"""Reference solution for random/randint: low + (32-bit Philox output mod (high - low)).

The modulo bias is at most (high - low) / 2^32 (2.4e-4 relative for the widest range allowed), far
below what the statistical check can see.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def randint_kernel(out_ptr, numel, low, span, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.randint(seed, offs).to(tl.int64)  # uint32 -> int64 zero-extends
    tl.store(out_ptr + offs, low + r % span, mask=offs < numel)


def randint_like(x: torch.Tensor, low: int, high: int, seed: int) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    numel = out.numel()
    block = 4096
    randint_kernel[(triton.cdiv(numel, block),)](out, numel, low, high - low, seed, BLOCK=block, num_warps=8)
    return out
