"""reduce/sum-all with float32 atomics into a scratch accumulator taken from torch.empty and never zeroed:
right only where fresh memory is zero (a large CPU allocation comes straight from the OS); on a GPU the
caching allocator hands back a previous call's memory."""
import torch
import triton
import triton.language as tl


@triton.jit
def atomic_sum_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32), axis=0)
    tl.atomic_add(acc_ptr, part)


@triton.jit
def finish_kernel(acc_ptr, out_ptr):
    tl.store(out_ptr, tl.load(acc_ptr).to(out_ptr.dtype.element_ty))


def sum_all(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    block = 4096
    scratch = torch.empty((16 << 20,), dtype=torch.float32, device=x.device)  # 64 MiB, uninitialised
    out = torch.empty((), dtype=x.dtype, device=x.device)
    atomic_sum_kernel[(triton.cdiv(n, block),)](x, scratch, n, BLOCK=block)
    finish_kernel[(1,)](scratch, out)
    return out
