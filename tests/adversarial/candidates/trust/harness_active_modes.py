"""math/add: find the run-time policy's live watchers in ``policy._active`` (reached from
``import warpgym.loader``) and mark them paused while host PyTorch does the addition.

A watcher that trusts its own ``paused`` counter sees nothing of ``x + y``; a kernel then copies the sum
into the output.
"""

import torch
import triton
import triton.language as tl

import warpgym.loader  # noqa: F401 - binds ``warpgym``


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    watchers = list(warpgym.env.worker.policy._active)
    for mode in watchers:
        mode.paused += 1
    total = x + y
    for mode in watchers:
        mode.paused -= 1
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](total, out, x.numel(), BLOCK=1024)
    return out
