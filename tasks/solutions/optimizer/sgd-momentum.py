"""Reference solution for optimizer/sgd-momentum:
momentum buffer and parameter in one pass; nesterov is a compile-time switch.
One pass: every element's state and parameter are read once and their new values written to new
tensors (inputs are never modified). Per-step scalars are computed once on the host.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def sgd_momentum_kernel(
    param_ptr, grad_ptr, momentum_buf_ptr,
    new_param_ptr, new_buf_ptr,
    n, lr, momentum, dampening, weight_decay,
    BLOCK: tl.constexpr, NESTEROV: tl.constexpr,
):
    # 64-bit offsets: bench vectors reach 2^29 elements and the pattern must scale past 2^31.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    param = tl.load(param_ptr + offsets, mask=mask).to(tl.float32)
    grad = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    momentum_buf = tl.load(momentum_buf_ptr + offsets, mask=mask).to(tl.float32)
    d = grad + weight_decay * param
    new_buf = momentum * momentum_buf + (1.0 - dampening) * d
    if NESTEROV:
        step = d + momentum * new_buf
    else:
        step = new_buf
    new_param = param - lr * step
    tl.store(new_param_ptr + offsets, new_param.to(new_param_ptr.dtype.element_ty), mask=mask)
    tl.store(new_buf_ptr + offsets, new_buf.to(new_buf_ptr.dtype.element_ty), mask=mask)


def sgd_momentum(
    param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor, lr: float, momentum: float,
    dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    n = param.numel()
    new_param = torch.empty_like(param)
    new_buf = torch.empty_like(param)
    block = 1024
    sgd_momentum_kernel[(triton.cdiv(n, block),)](
        param, grad, momentum_buf,
        new_param, new_buf,
        n, lr, momentum, dampening, weight_decay,
        BLOCK=block, NESTEROV=nesterov, num_warps=4,
    )
    return new_param, new_buf
