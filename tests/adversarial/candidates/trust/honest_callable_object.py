"""math/add, honest: the entrypoint is an instance of a class with ``__call__`` (bound at module level,
not a ``def``), holding its block size; the kernel body spells ``triton.language`` as ``language`` (its
constexpr annotation stays ``tl.constexpr``, which Triton's interpreter matches by name). Must pass."""

import torch
import triton
import triton.language as language
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = language.program_id(0) * BLOCK + language.arange(0, BLOCK)
    mask = offsets < n
    a = language.load(x_ptr + offsets, mask=mask)
    language.store(out_ptr + offsets, a + language.load(y_ptr + offsets, mask=mask), mask=mask)


class Adder:
    def __init__(self, block: int) -> None:
        self.block = block

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)  # noqa: E731
        add_kernel[grid](x, y, out, x.numel(), BLOCK=self.block)
        return out


add = Adder(1024)
