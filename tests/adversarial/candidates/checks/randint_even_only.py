"""random/randint that never draws an odd offset when the range is wider than 16 values: out = low + 2 *
(r mod (span // 2)). Half the integers of [low, high) never occur, yet 16 equal sub-ranges fill evenly;
the count of (v - low) mod 2 shows it."""
import torch
import triton
import triton.language as tl


@triton.jit
def randint_kernel(out_ptr, numel, low, span, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.randint(seed, offs).to(tl.int64)
    wide = r * 0 + span > 16
    v = tl.where(wide, 2 * (r % (span // 2)), r % span)
    tl.store(out_ptr + offs, low + v, mask=offs < numel)


def randint_like(x: torch.Tensor, low: int, high: int, seed: int) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    numel = out.numel()
    randint_kernel[(triton.cdiv(numel, 1024),)](out, numel, low, high - low, seed, BLOCK=1024)
    return out
