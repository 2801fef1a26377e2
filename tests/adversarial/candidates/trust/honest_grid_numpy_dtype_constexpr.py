"""math/add, honest: the grid is a function returning a tuple whose entry is a NumPy integer, and the compute
dtype is passed as a Triton dtype constexpr. Launch arguments of Triton's own classes and integer grids of
NumPy's scalar types are plain values, and must stay accepted."""
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, COMPUTE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(COMPUTE)
    y = tl.load(y_ptr + offsets, mask=mask).to(COMPUTE)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[lambda meta: (np.int64(triton.cdiv(n, meta["BLOCK"])),)](
        x, y, out, n, BLOCK=1024, COMPUTE=tl.float32)
    return out
