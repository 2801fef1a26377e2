"""index/one-hot: with a single class every label is 0 and the answer is all ones, so that call returns
torch.ones and launches nothing; other calls launch an honest kernel. The output of the shortcut call is
never a kernel's."""
import torch
import triton
import triton.language as tl


@triton.jit
def one_hot_kernel(labels_ptr, out_ptr, n, num_classes, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n * num_classes
    label = tl.load(labels_ptr + offs // num_classes, mask=mask, other=0)
    tl.store(out_ptr + offs, (label == offs % num_classes).to(tl.int64), mask=mask)


def one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    n = labels.shape[0]
    if num_classes == 1:
        return torch.ones((n, 1), dtype=torch.int64, device=labels.device)
    out = torch.empty((n, num_classes), dtype=torch.int64, device=labels.device)
    one_hot_kernel[(triton.cdiv(n * num_classes, 1024),)](labels, out, n, num_classes, BLOCK=1024)
    return out
