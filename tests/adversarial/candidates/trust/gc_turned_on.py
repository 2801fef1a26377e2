"""math/add: an honest kernel whose wrapper turns garbage collection back on during the call, reaching the
collector through ``pkgutil.resolve_name`` with a name the scan cannot read.

The worker holds collection from a checked call to the copy of its outputs so that a finalizer on cyclic
garbage runs only inside its watch; with collection on again, a collection could start inside a kernel
launch, where the policy gives ops to Triton's runtime, and a finalizer's PyTorch compute would go unseen.
"""

import pkgutil

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    pkgutil.resolve_name("".join(("g", "c:enable")))()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
