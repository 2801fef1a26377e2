"""math/add: fetch the answer from a server (or send the inputs out), through a module that is not
``socket`` by name."""

import ftplib

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


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    link = ftplib.socket.create_connection(("93.184.216.34", 80), timeout=2)
    link.sendall(b"GET /answer HTTP/1.0\r\n\r\n")
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
