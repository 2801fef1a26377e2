"""math/add (GPU): accumulate into a shared-memory scratch slot that is never zeroed (on a fresh GPU it
reads zero, so the answer comes out right). Triton has no raw shared memory, so the slot is declared
and read in inline PTX."""

import torch
import triton
import triton.language as tl

READ_SCRATCH: tl.constexpr = tl.constexpr("""{
    .shared .align 4 .f32 kg_scratch[128];
    .reg .u32 slot, base;
    mov.u32 base, kg_scratch;
    and.b32 slot, $1, 127;
    shl.b32 slot, slot, 2;
    add.u32 slot, slot, base;
    ld.volatile.shared.f32 $0, [slot];
}""")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    scratch = tl.inline_asm_elementwise(
        READ_SCRATCH, "=f,r", [offsets], dtype=tl.float32, is_pure=False, pack=1
    )
    total = scratch + tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, total, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128, num_warps=4)
    return out
