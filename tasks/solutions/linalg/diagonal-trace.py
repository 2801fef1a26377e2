"""Reference solution for linalg/diagonal-trace: one program per matrix walks its diagonal.

Element j of the diagonal sits at offset j * (n + 1); each program gathers BLOCK of them per step,
stores them to the contiguous diag row and keeps a float32 running sum for the trace. Only the
diagonal's sectors are touched.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def diagonal_trace_kernel(x_ptr, diag_ptr, trace_ptr, N, stride_xb, stride_xr, stride_xc, stride_db,
                          BLOCK: tl.constexpr):
    mat = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for j in range(0, N, BLOCK):
        idx = j + offs
        d = tl.load(x_ptr + mat * stride_xb + idx.to(tl.int64) * (stride_xr + stride_xc), mask=idx < N,
                    other=0.0)
        tl.store(diag_ptr + mat * stride_db + idx, d, mask=idx < N)
        acc += d.to(tl.float32)
    tl.store(trace_ptr + mat, tl.sum(acc, axis=0).to(trace_ptr.dtype.element_ty))


def diagonal_trace(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    batch, n, _ = x.shape
    diag = torch.empty((batch, n), dtype=x.dtype, device=x.device)
    trace = torch.empty((batch,), dtype=x.dtype, device=x.device)
    block = min(1024, triton.next_power_of_2(n))
    diagonal_trace_kernel[(batch,)](x, diag, trace, n, x.stride(0), x.stride(1), x.stride(2), diag.stride(0),
                                    BLOCK=block, num_warps=4)
    return diag, trace
