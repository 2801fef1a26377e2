"""math/add: right on the first, smallest case (the probe), wrong on every other one, where it calls a
libdevice function Triton's interpreter has no equivalent for, so the CPU cannot run it: a judge that
counted "not run on the CPU" as passed would accept it. The j0 term is multiplied by zero and compiles
for the target, so nothing but the interpreter's gap stands between it and the wrong answer."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, DODGE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if DODGE:
        out = x - y + 0.0 * libdevice.j0(x)
    else:
        out = x + y
    tl.store(out_ptr + offsets, out, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, DODGE=n != 1000)
    return out
