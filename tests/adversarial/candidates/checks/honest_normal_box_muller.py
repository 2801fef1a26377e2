"""random/normal: Box-Muller on two independent uniforms per element
(tl.rand4x gives four Philox words of one counter; two are used), z = sqrt(-2 ln u1) cos(2 pi u2), with
u1 kept away from 0."""
import torch
import triton
import triton.language as tl


@triton.jit
def box_muller(out_ptr, numel, mean, std, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    u1, u2, _, _ = tl.rand4x(seed, offs)
    u1 = tl.maximum(u1, 1.0e-7)
    z = tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * u2)
    tl.store(out_ptr + offs, (mean + std * z).to(out_ptr.dtype.element_ty), mask=offs < numel)


def normal_like(x: torch.Tensor, mean: float, std: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    numel = out.numel()
    box_muller[(triton.cdiv(numel, 1024),)](out, numel, mean, std, seed, BLOCK=1024)
    return out
