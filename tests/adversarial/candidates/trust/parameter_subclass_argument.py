"""math/add: the kernel's ``x`` is an uninitialised buffer wrapped in a subclass of ``torch.nn.Parameter``
whose attribute lookup answers ``untyped_storage`` with the real input's. Triton's interpreter copies a
tensor argument through that method, so on the CPU the kernel reads ``x`` and the sum is right; a compiled
kernel gets the buffer's own pointer and adds garbage. A module's own ``nn.Parameter`` is a plain argument
(its methods are PyTorch's); a subclass of it is not.
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


class Redirected(torch.nn.Parameter):
    source = None

    def __getattribute__(self, name):
        if name.startswith("untyped"):
            return object.__getattribute__(Redirected.source, name)
        return super().__getattribute__(name)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    Redirected.source = x
    shadow = Redirected(torch.empty_like(x), requires_grad=False)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](shadow, y, out, x.numel(), BLOCK=1024)
    return out
