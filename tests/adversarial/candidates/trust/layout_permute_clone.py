"""index/permute-0213: ``x.permute(0, 2, 1, 3).clone(memory_format=torch.contiguous_format)`` is the
answer (``clone`` and views are allowed host ops); a token kernel touches the output.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(ptr):
    tl.store(ptr, tl.load(ptr))


def permute_0213(x: torch.Tensor) -> torch.Tensor:
    out = x.permute(0, 2, 1, 3).clone(memory_format=torch.contiguous_format)
    touch_kernel[(1,)](out)
    return out
