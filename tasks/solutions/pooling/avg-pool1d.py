"""Reference solution for pooling/avg-pool1d (count_include_pad=True): the divisor is kernel_size."""

import torch
import triton
import triton.language as tl


@triton.jit
def avg_pool1d_kernel(x_ptr, out_ptr, L, OL, K, S, P, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < OL
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(0, K):
        pos = offs * S - P + k
        ok = valid & (pos >= 0) & (pos < L)
        acc += tl.load(x_ptr + row * L + pos, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * OL + offs, (acc / K).to(out_ptr.dtype.element_ty), mask=valid)


def avg_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    n, c, length = x.shape
    ol = (length + 2 * padding - kernel_size) // stride + 1
    x = x.contiguous()
    out = torch.empty((n, c, ol), dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(ol), 1024)
    grid = (n * c, triton.cdiv(ol, block))
    avg_pool1d_kernel[grid](x, out, length, ol, kernel_size, stride, padding, BLOCK=block, num_warps=4)
    return out
