"""math/add, honest: a pre-run hook of the module's own (a Python function, watched like any host code)
zeroes the output before the kernel accumulates x and y into it with atomics."""
import torch
import triton
import triton.language as tl


@triton.jit
def accumulate_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.atomic_add(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
    tl.atomic_add(out_ptr + offsets, tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _zero_output(*args, **kwargs):
    out = kwargs.get("out_ptr", args[0] if args else None)
    out.zero_()


accumulate_kernel.add_pre_run_hook(_zero_output)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    accumulate_kernel[(triton.cdiv(n, 1024),)](out, x, y, n, BLOCK=1024)
    return out
