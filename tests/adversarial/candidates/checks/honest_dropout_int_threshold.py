"""random/dropout: one raw 32-bit Philox word per element, keyed by the
whole seed and the flat index (tl.randint), compared with an integer threshold p * 2^32; kept elements
are scaled in float32. A 2-D grid over (row, column block), offsets still flat over the tensor."""
import torch
import triton
import triton.language as tl


@triton.jit
def dropout_rows(x_ptr, out_ptr, n, threshold, scale, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < n
    flat = row * n + cols
    x = tl.load(x_ptr + flat, mask=ok, other=0.0).to(tl.float32)
    word = tl.randint(seed, flat.to(tl.uint32)).to(tl.int64)  # uint32 -> [0, 2^32)
    keep = word >= threshold
    tl.store(out_ptr + flat, tl.where(keep, x * scale, 0.0).to(out_ptr.dtype.element_ty), mask=ok)


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty_like(x)
    threshold = int(p * 4294967296.0)
    block = 512
    dropout_rows[(m, triton.cdiv(n, block))](x, out, n, threshold, 1.0 / (1.0 - p), seed, BLOCK=block)
    return out
