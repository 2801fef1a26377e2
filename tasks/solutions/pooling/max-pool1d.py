"""Reference solution for pooling/max-pool1d: BLOCK outputs of one (n, c) row per program.

kernel_size, stride and padding are compile-time constants, so the taps are unrolled and all their loads
are in flight together (a runtime tap loop waits on memory once per tap). When the stride is a power of
two, tap k = q*S + r + padding of output o is x[(o + q)*S + r]: for each q the program reads the span
x[(start + q)*S : (start + q + BLOCK)*S] as one contiguous vector and reshapes it to (BLOCK, S), so
column r holds tap q*S + r + padding of every output; columns that are no tap are masked and the rest
reduced in registers. The q = 0 span is 16-byte aligned; the shifted ones (padding, overlapping windows)
are read again from L1 as whole coalesced lines instead of one strided element per output. Other
strides load each tap with a strided gather.
"""

import torch
import triton
import triton.language as tl

Tiles = tuple[int, int]

# (outputs per program, num_warps)
POOL: Tiles = (2048, 8)


@triton.jit
def max_pool1d_kernel(x_ptr, out_ptr, L, OL, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr,
                      TILED: tl.constexpr, Q_FIRST: tl.constexpr, Q_LAST: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    start = tl.program_id(1) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    valid = offs < OL
    x_row = x_ptr + row * L
    acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    if TILED:
        for q in tl.static_range(Q_FIRST, Q_LAST + 1):
            if q == 0:
                span = start * S + tl.arange(0, BLOCK * S)
                tile = tl.reshape(tl.load(x_row + span, mask=span < L, other=-float("inf")), (BLOCK, S))
            else:
                span = (offs + q)[:, None] * S + tl.arange(0, S)[None, :]
                tile = tl.load(x_row + span, mask=(span >= 0) & (span < L), other=-float("inf"))
            tile = tile.to(tl.float32)
            if (q * S + P < 0) or (q * S + S - 1 + P >= K):
                tap = q * S + P + tl.arange(0, S)
                tile = tl.where(((tap >= 0) & (tap < K))[None, :], tile, -float("inf"))
            acc = tl.maximum(acc, tl.max(tile, axis=1))
    else:
        for k in tl.static_range(K):
            pos = offs * S + (k - P)
            ok = valid & (pos >= 0) & (pos < L)
            acc = tl.maximum(acc, tl.load(x_row + pos, mask=ok, other=-float("inf")).to(tl.float32))
    tl.store(out_ptr + row * OL + offs, acc.to(out_ptr.dtype.element_ty), mask=valid)


def max_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    n, c, length = x.shape
    ol = (length + 2 * padding - kernel_size) // stride + 1
    out = torch.empty((n, c, ol), dtype=x.dtype, device=x.device)
    block, warps = POOL
    block = min(triton.next_power_of_2(ol), block)
    tiled = stride & (stride - 1) == 0 and 2 <= stride <= 16
    if tiled:
        block = max(min(block, 8192 // stride), 1)
    grid = (n * c, triton.cdiv(ol, block))
    first, last = -padding // stride, (kernel_size - 1 - padding) // stride
    max_pool1d_kernel[grid](x, out, length, ol, K=kernel_size, S=stride, P=padding, TILED=tiled,
                            Q_FIRST=first, Q_LAST=last, BLOCK=block, num_warps=warps)
    return out
