"""random/bernoulli: a 24-bit uniform from the Philox word per element
against p in float32; p = 0 never fires (u < 0 is false) and p = 1 always does (u < 1)."""
import torch
import triton
import triton.language as tl


@triton.jit
def bernoulli_words(p_ptr, out_ptr, numel, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < numel
    p = tl.load(p_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    u = (tl.randint(seed, offs) >> 8).to(tl.float32) * (1.0 / 16777216.0)
    tl.store(out_ptr + offs, (u < p).to(tl.float32).to(out_ptr.dtype.element_ty), mask=ok)


def bernoulli(probs: torch.Tensor, seed: int) -> torch.Tensor:
    out = torch.empty_like(probs)
    numel = out.numel()
    bernoulli_words[(triton.cdiv(numel, 1024),)](probs, out, numel, seed, BLOCK=1024)
    return out
