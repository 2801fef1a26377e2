"""Reference solution for optimizer/adagrad:
accumulated squares and parameter in one pass; the decayed rate is a host scalar.
One pass: every element's state and parameter are read once and their new values written to new
tensors (inputs are never modified). Per-step scalars are computed once on the host.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def adagrad_kernel(
    param_ptr, grad_ptr, state_sum_ptr,
    new_param_ptr, new_state_sum_ptr,
    n, clr, weight_decay, eps,
    BLOCK: tl.constexpr,
):
    # 64-bit offsets: bench vectors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    param = tl.load(param_ptr + offsets, mask=mask).to(tl.float32)
    grad = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    state_sum = tl.load(state_sum_ptr + offsets, mask=mask).to(tl.float32)
    g = grad + weight_decay * param
    new_state_sum = state_sum + g * g
    new_param = param - clr * g / (tl.sqrt(new_state_sum) + eps)
    tl.store(new_param_ptr + offsets, new_param.to(new_param_ptr.dtype.element_ty), mask=mask)
    tl.store(new_state_sum_ptr + offsets, new_state_sum.to(new_state_sum_ptr.dtype.element_ty), mask=mask)


def adagrad(
    param: torch.Tensor, grad: torch.Tensor, state_sum: torch.Tensor, step: int, lr: float,
    lr_decay: float = 0.0, weight_decay: float = 0.0, eps: float = 1e-10,
) -> tuple[torch.Tensor, torch.Tensor]:
    clr = lr / (1.0 + (step - 1) * lr_decay)
    n = param.numel()
    new_param = torch.empty_like(param)
    new_state_sum = torch.empty_like(param)
    block = 1024
    adagrad_kernel[(triton.cdiv(n, block),)](
        param, grad, state_sum,
        new_param, new_state_sum,
        n, clr, weight_decay, eps,
        BLOCK=block, num_warps=4,
    )
    return new_param, new_state_sum
