"""Reference solution for optimizer/adamw:
decoupled decay, both moments, and the bias-corrected step in one pass.
One pass: every element's state and parameter are read once and their new values written to new
tensors (inputs are never modified). Per-step scalars are computed once on the host.
1 - beta is computed on the host: Triton passes a Python float as float32, and 1 - 0.999 from a
float32 beta is 1.3e-5 off.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def adamw_kernel(
    param_ptr, grad_ptr, exp_avg_ptr, exp_avg_sq_ptr,
    new_param_ptr, new_exp_avg_ptr, new_exp_avg_sq_ptr,
    n, step_size, inv_sqrt_bias2, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, decay,
    BLOCK: tl.constexpr,
):
    # 64-bit offsets: bench vectors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    param = tl.load(param_ptr + offsets, mask=mask).to(tl.float32)
    grad = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    exp_avg = tl.load(exp_avg_ptr + offsets, mask=mask).to(tl.float32)
    exp_avg_sq = tl.load(exp_avg_sq_ptr + offsets, mask=mask).to(tl.float32)
    new_exp_avg = beta1 * exp_avg + one_minus_beta1 * grad
    new_exp_avg_sq = beta2 * exp_avg_sq + one_minus_beta2 * grad * grad
    denom = tl.sqrt(new_exp_avg_sq) * inv_sqrt_bias2 + eps
    new_param = param * decay - step_size * new_exp_avg / denom
    tl.store(new_param_ptr + offsets, new_param.to(new_param_ptr.dtype.element_ty), mask=mask)
    tl.store(new_exp_avg_ptr + offsets, new_exp_avg.to(new_exp_avg_ptr.dtype.element_ty), mask=mask)
    tl.store(new_exp_avg_sq_ptr + offsets, new_exp_avg_sq.to(new_exp_avg_sq_ptr.dtype.element_ty), mask=mask)


def adamw(
    param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, step: int,
    lr: float, beta1: float, beta2: float, eps: float, weight_decay: float = 0.01,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    step_size = lr / (1.0 - beta1**step)
    inv_sqrt_bias2 = 1.0 / (1.0 - beta2**step) ** 0.5
    decay = 1.0 - lr * weight_decay
    n = param.numel()
    new_param = torch.empty_like(param)
    new_exp_avg = torch.empty_like(param)
    new_exp_avg_sq = torch.empty_like(param)
    block = 1024
    adamw_kernel[(triton.cdiv(n, block),)](
        param, grad, exp_avg, exp_avg_sq,
        new_param, new_exp_avg, new_exp_avg_sq,
        n, step_size, inv_sqrt_bias2, beta1, beta2, 1.0 - beta1, 1.0 - beta2, eps, decay,
        BLOCK=block, num_warps=4,
    )
    return new_param, new_exp_avg, new_exp_avg_sq
