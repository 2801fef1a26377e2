"""math/add, honest: an autotuned kernel with a single config, a heuristic that derives a constexpr
from the arguments, and a grid lambda reading the block size from the chosen meta-parameters. The
constexpr values the interpreter runs with are the ones the target's compile gets.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 512}, num_warps=4)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out
