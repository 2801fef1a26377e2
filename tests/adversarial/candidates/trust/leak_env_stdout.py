"""math/add: an honest kernel that prints the worker's environment, and the harness parent's
(``/proc/<ppid>/environ``), to stdout: a harness that passes the candidate's output on to the verdict
leaks any secret it let into the worker.
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    print("ENV", dict(os.environ))
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            print("PARENT", f.read().decode(errors="replace"))
    except OSError as exc:
        print("PARENT unreadable:", exc)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
