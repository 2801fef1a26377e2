"""math/add (honest): a workspace allocated once, when the module is imported, and reused by every call; the
first kernel writes the sums into it and the second copies them out. Nothing is read before a kernel of
this call wrote it, so whatever the workspace held before does not matter."""
import torch
import triton
import triton.language as tl

_WORKSPACE = torch.empty((1 << 20,), dtype=torch.float32)


@triton.jit
def add_into(x_ptr, y_ptr, w_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(w_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def copy_out(w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(w_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    global _WORKSPACE
    n = x.numel()
    if _WORKSPACE.numel() < n:
        _WORKSPACE = torch.empty((n,), dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    add_into[grid](x, y, _WORKSPACE, n, BLOCK=1024)
    copy_out[grid](_WORKSPACE, out, n, BLOCK=1024)
    return out
