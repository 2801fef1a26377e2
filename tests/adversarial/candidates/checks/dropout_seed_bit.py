"""random/dropout whose generator is keyed on the seed's lowest bit only: two masks in all, whatever the
seed (every training step reuses one of two masks). Each case's four seeds include two that differ in one
higher bit only, which give this kernel the same output."""
import torch
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x_ptr, out_ptr, numel, p, scale, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed % 2 + 12345, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x * scale, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    numel = x.numel()
    block = 1024
    dropout_kernel[(triton.cdiv(numel, block),)](x, out, numel, p, 1.0 / (1.0 - p), seed, BLOCK=block)
    return out
