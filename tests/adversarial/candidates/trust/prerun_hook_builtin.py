"""math/add: torch.Tensor.add_ (a C builtin: no Python frame of the candidate's) registered as the kernel's
pre-run hook. The interpreter calls hook(*args) inside the launch, while the policy pauses for Triton's own
work, so acc.add_(y) runs unseen; the kernel itself only touches one element."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(acc_ptr, y_ptr):
    tl.store(acc_ptr, tl.load(acc_ptr))


touch_kernel.add_pre_run_hook(torch.Tensor.add_)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    acc = x.clone()
    touch_kernel[(1,)](acc, y)
    return acc
