"""Reference solution for random/bernoulli: out = (u < p) with u = tl.rand(seed, flat index) in [0, 1),
so p = 0 never fires and p = 1 always does."""

import torch
import triton
import triton.language as tl


@triton.jit
def bernoulli_kernel(p_ptr, out_ptr, numel, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    hit = tl.rand(seed, offs) < p
    tl.store(out_ptr + offs, hit.to(tl.float32).to(out_ptr.dtype.element_ty), mask=mask)


def bernoulli(probs: torch.Tensor, seed: int) -> torch.Tensor:
    probs = probs.contiguous()
    out = torch.empty_like(probs)
    numel = probs.numel()
    block = 4096
    bernoulli_kernel[(triton.cdiv(numel, block),)](probs, out, numel, seed, BLOCK=block, num_warps=8)
    return out
