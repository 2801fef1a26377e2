"""random/uniform: the top 24 bits of a Philox word give u = k / 2^24
in [0, 1) (every float32 step of [0, 1) at that resolution), mapped to low + (high - low) * u."""
import torch
import triton
import triton.language as tl


@triton.jit
def uniform_bits(out_ptr, numel, low, high, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.randint(seed, offs)
    u = (r >> 8).to(tl.float32) * (1.0 / 16777216.0)
    tl.store(out_ptr + offs, (low + (high - low) * u).to(out_ptr.dtype.element_ty), mask=offs < numel)


def uniform_like(x: torch.Tensor, low: float, high: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    numel = out.numel()
    uniform_bits[(triton.cdiv(numel, 1024),)](out, numel, low, high, seed, BLOCK=1024)
    return out
