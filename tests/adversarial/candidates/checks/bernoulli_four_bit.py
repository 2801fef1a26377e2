"""random/bernoulli comparing p with a 4-bit random number (one of 16 bin centres): every probability is in
effect rounded to a multiple of 1/16 (p = 0.02 never fires, p = 0.97 always does). Counts over tenths of
[0, 1] average that out; the blocks of constant probability 0.02 and 0.97 show it."""
import torch
import triton
import triton.language as tl


@triton.jit
def bernoulli_kernel(p_ptr, out_ptr, numel, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = (tl.floor(tl.rand(seed, offs) * 16.0) + 0.5) / 16.0
    hit = (u < p) | (p >= 1.0)
    tl.store(out_ptr + offs, hit.to(tl.float32).to(out_ptr.dtype.element_ty), mask=mask)


def bernoulli(probs: torch.Tensor, seed: int) -> torch.Tensor:
    out = torch.empty_like(probs)
    numel = out.numel()
    bernoulli_kernel[(triton.cdiv(numel, 1024),)](probs, out, numel, seed, BLOCK=1024)
    return out
