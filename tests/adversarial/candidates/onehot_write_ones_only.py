"""index/one-hot: that writes only the ones, leaving every other element as torch.empty left it. The output is
carved from a 64 MiB allocation, which on the CPU comes fresh from the OS (zero pages) and escapes the
worker's poison; on a GPU the caching allocator hands back old memory and the zeros are garbage."""
import torch
import triton
import triton.language as tl


@triton.jit
def ones_kernel(labels_ptr, out_ptr, n, num_classes, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < n
    label = tl.load(labels_ptr + rows, mask=ok, other=0)
    tl.store(out_ptr + rows.to(tl.int64) * num_classes + label, tl.full((BLOCK,), 1, tl.int64), mask=ok)


def one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    n = labels.shape[0]
    total = n * num_classes
    buf = torch.empty((max(total, 8 << 20),), dtype=torch.int64, device=labels.device)
    out = buf[:total].view(n, num_classes)
    ones_kernel[(triton.cdiv(n, 256),)](labels, out, n, num_classes, BLOCK=256)
    return out
