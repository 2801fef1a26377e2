"""normalization/softmax: call the task's own reference function, inside the run-time policy's own
"paused" window (the one kernel launches use), both reached from ``import warpgym.loader``.

The reference is PyTorch; run while the watcher is paused, its ops are never counted, and a kernel copies
the answer into the output, so the output is "written by a kernel".
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


def softmax(x: torch.Tensor) -> torch.Tensor:
    task = warpgym.tasks.get_task("normalization/softmax")
    with warpgym.env.worker.policy.paused():
        result = task.reference(x).to(x.dtype)
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](result, out, x.numel(), BLOCK=1024)
    return out
