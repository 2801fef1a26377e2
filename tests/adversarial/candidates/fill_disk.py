"""math/add: fill the disk from the one directory the worker may write to: one huge file, then many
large ones (the limits in the test are small: 8 MiB per file, 32 MiB in all)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(
        out_ptr + offsets,
        tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
        mask=mask,
    )


def _fill(name: str, mib: int) -> str:
    chunk = b"\0" * (1 << 20)
    try:
        with open(name, "wb") as f:
            for _ in range(mib):
                f.write(chunk)
                f.flush()
    except OSError as exc:
        return f"{name}: {exc.strerror}"
    return f"{name}: wrote {mib} MiB"


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    report = [_fill("big.bin", 64)] + [_fill(f"part{i}.bin", 7) for i in range(8)]
    raise RuntimeError("; ".join(report))
