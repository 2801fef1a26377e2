"""math/add: the kernel's path is chosen by a constexpr whose value is an ``int`` subclass: its value is
0, so the kernel compiled for the target (from the recorded value) writes every other block only, while
its ``__bool__`` says True, so the interpreter, which hands the object itself to the kernel body, takes
the full path. The CPU check sees a correct add; a GPU would run the half-written one.
"""

import torch
import triton
import triton.language as tl


class Switch(int):
    __module__ = "triton.language"
    def __bool__(self) -> bool:
        return True


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, FULL: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    if not FULL:
        mask = mask & (pid % 2 == 0)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024, FULL=Switch(0))
    return out
