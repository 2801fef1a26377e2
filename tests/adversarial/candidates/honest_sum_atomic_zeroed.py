"""Honest reduce/sum-all (for race_rmw_sum and scratch_assumed_zero): a zeroed float32 accumulator
(torch.zeros: asked for, not assumed) that every program adds its partial into with tl.atomic_add, so no
update is lost however the programs interleave; a one-program kernel casts the total. Programs stride
over the vector (a persistent grid of at most 256 programs)."""
import torch
import triton
import triton.language as tl


@triton.jit
def strided_atomic_sum(x_ptr, acc_ptr, n, rounds, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.float32)
    for _ in range(rounds):
        total += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        offs += step
    tl.atomic_add(acc_ptr, tl.sum(total, axis=0))


@triton.jit
def cast_total(acc_ptr, out_ptr):
    tl.store(out_ptr, tl.load(acc_ptr).to(out_ptr.dtype.element_ty))


def sum_all(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    block = 2048
    programs = max(1, min(256, triton.cdiv(n, block)))
    acc = torch.zeros((1,), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    strided_atomic_sum[(programs,)](x, acc, n, triton.cdiv(n, programs * block), BLOCK=block)
    cast_total[(1,)](acc, out)
    return out
