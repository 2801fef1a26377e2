"""random/randint: Lemire's multiply-shift maps a 32-bit Philox word r to
floor(r * span / 2^32), every integer of [0, span) reachable (bias below span / 2^32)."""
import torch
import triton
import triton.language as tl


@triton.jit
def randint_mulhi(out_ptr, numel, low, span, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.randint(seed, offs).to(tl.int64)
    tl.store(out_ptr + offs, low + ((r * span) >> 32), mask=offs < numel)


def randint_like(x: torch.Tensor, low: int, high: int, seed: int) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    numel = out.numel()
    randint_mulhi[(triton.cdiv(numel, 2048),)](out, numel, low, high - low, seed, BLOCK=2048)
    return out
