"""Reference solution for optimizer/rmsprop:
square average and parameter in one pass.
One pass: every element's state and parameter are read once and their new values written to new
tensors (inputs are never modified). Per-step scalars are computed once on the host.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsprop_kernel(
    param_ptr, grad_ptr, square_avg_ptr,
    new_param_ptr, new_square_avg_ptr,
    n, lr, alpha, eps, weight_decay,
    BLOCK: tl.constexpr,
):
    # 64-bit offsets: bench vectors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    param = tl.load(param_ptr + offsets, mask=mask).to(tl.float32)
    grad = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    square_avg = tl.load(square_avg_ptr + offsets, mask=mask).to(tl.float32)
    g = grad + weight_decay * param
    new_square_avg = alpha * square_avg + (1.0 - alpha) * g * g
    new_param = param - lr * g / (tl.sqrt(new_square_avg) + eps)
    tl.store(new_param_ptr + offsets, new_param.to(new_param_ptr.dtype.element_ty), mask=mask)
    tl.store(new_square_avg_ptr + offsets, new_square_avg.to(new_square_avg_ptr.dtype.element_ty), mask=mask)


def rmsprop(
    param: torch.Tensor, grad: torch.Tensor, square_avg: torch.Tensor, lr: float, alpha: float,
    eps: float, weight_decay: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    n = param.numel()
    new_param = torch.empty_like(param)
    new_square_avg = torch.empty_like(param)
    block = 1024
    rmsprop_kernel[(triton.cdiv(n, block),)](
        param, grad, square_avg,
        new_param, new_square_avg,
        n, lr, alpha, eps, weight_decay,
        BLOCK=block, num_warps=4,
    )
    return new_param, new_square_avg
