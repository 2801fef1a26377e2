"""math/add (honest): the kernel adds and also counts non-finite results into a one-element scratch tensor,
which the host reads with .numpy() (a one-element storage) to decide whether to log."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    s = tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, s, mask=mask)
    bad = tl.sum(tl.where(mask & (s != s), 1, 0), axis=0)
    tl.atomic_add(flag_ptr, bad)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    flag = torch.zeros(1, dtype=torch.int32)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, flag, x.numel(), BLOCK=1024)
    if flag.numpy()[0]:
        print("non-finite values in the sum")
    return out
