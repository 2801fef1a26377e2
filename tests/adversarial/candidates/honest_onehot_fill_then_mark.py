"""Honest index/one-hot (for onehot_write_ones_only): two launches over a plain torch.empty output: the
first writes a zero into every element, the second marks each row's label with a one. Every element is
written by a kernel, so whatever memory the allocator hands out is overwritten."""
import torch
import triton
import triton.language as tl


@triton.jit
def zero_fill(out_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.int64), mask=offs < total)


@triton.jit
def mark_hot(labels_ptr, out_ptr, n, num_classes, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < n
    label = tl.load(labels_ptr + rows, mask=ok, other=0)
    tl.store(out_ptr + rows.to(tl.int64) * num_classes + label, tl.full((BLOCK,), 1, tl.int64), mask=ok)


def one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    n = labels.shape[0]
    out = torch.empty((n, num_classes), dtype=torch.int64, device=labels.device)
    total = n * num_classes
    zero_fill[(triton.cdiv(total, 2048),)](out, total, BLOCK=2048)
    mark_hot[(triton.cdiv(n, 128),)](labels, out, n, num_classes, BLOCK=128)
    return out
