"""math/add: a real kernel whose output is returned re-typed (``as_subclass``) as ``torch.nn.Parameter``,
a Tensor subclass that passes ``isinstance(out, torch.Tensor)`` and compares equal, but whose type is not the
plain tensor the task returns (and which carries autograd state into the harness).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out.as_subclass(torch.nn.Parameter)
