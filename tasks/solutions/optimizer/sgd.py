"""Reference solution for optimizer/sgd:
new_param = param - lr * (grad + weight_decay * param), in float32.
One pass: every element's state and parameter are read once and their new values written to new
tensors (inputs are never modified). Per-step scalars are computed once on the host.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def sgd_kernel(
    param_ptr, grad_ptr,
    new_param_ptr,
    n, lr, weight_decay,
    BLOCK: tl.constexpr,
):
    # 64-bit offsets: bench vectors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    param = tl.load(param_ptr + offsets, mask=mask).to(tl.float32)
    grad = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    new_param = param - lr * (grad + weight_decay * param)
    tl.store(new_param_ptr + offsets, new_param.to(new_param_ptr.dtype.element_ty), mask=mask)


def sgd(
    param: torch.Tensor, grad: torch.Tensor, lr: float, weight_decay: float = 0.0,
) -> torch.Tensor:
    n = param.numel()
    new_param = torch.empty_like(param)
    block = 1024
    sgd_kernel[(triton.cdiv(n, block),)](
        param, grad,
        new_param,
        n, lr, weight_decay,
        BLOCK=block, num_warps=4,
    )
    return new_param
