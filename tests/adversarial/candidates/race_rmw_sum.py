"""reduce/sum-all with a non-atomic read-modify-write of one global accumulator: every program loads the
running total, adds its partial and stores it back. Sequential programs never lose an update;
on a GPU concurrent programs do (lost updates)."""
import torch
import triton
import triton.language as tl


@triton.jit
def init_kernel(acc_ptr):
    tl.store(acc_ptr, 0.0)


@triton.jit
def rmw_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32), axis=0)
    total = tl.load(acc_ptr)
    tl.store(acc_ptr, total + part)


@triton.jit
def finish_kernel(acc_ptr, out_ptr):
    tl.store(out_ptr, tl.load(acc_ptr).to(out_ptr.dtype.element_ty))


def sum_all(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    block = 4096
    acc = torch.empty((1,), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    init_kernel[(1,)](acc)
    rmw_kernel[(triton.cdiv(n, block),)](x, acc, n, BLOCK=block)
    finish_kernel[(1,)](acc, out)
    return out
