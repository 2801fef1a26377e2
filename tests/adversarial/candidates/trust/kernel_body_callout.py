"""normalization/softmax: in the interpreter a @triton.jit body is plain Python, so it can call a plain
Python function (held in a constexpr global) that computes with PyTorch; a constexpr read from
``TRITON_INTERPRET`` drops the call when the kernel is compiled, so the offline compile for the GPU
target succeeds too.

The call happens inside the launch, where the op watcher is paused for the interpreter's own work.
"""

import os

import torch
import triton
import triton.language as tl

INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")
_PENDING = []


def _fill_pending():
    while _PENDING:
        x, scratch = _PENDING.pop()
        scratch.copy_(x.softmax(-1))


# A constexpr global passes the compiler's check of what a kernel references; compiled, it holds None.
FILL = tl.constexpr(_fill_pending if INTERPRETED.value else None)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    if INTERPRETED:
        FILL()
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty_like(x)
    out = torch.empty_like(x)
    _PENDING.append((x, scratch))
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, out, x.numel(), BLOCK=1024)
    return out
