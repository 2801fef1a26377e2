"""math/add: answer correctly, then write a reply of its own on the worker's socket whose header claims
a 4 TiB output, hoping the judge allocates it (running out of memory) or waits for bytes that never come."""

import json
import os
import struct
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    header = json.dumps({"ok": True, "outputs": [{"__tensor__": 0, "dtype": "float32", "shape": [1 << 40]}],
                         "launches": 1, "forbidden_ops": {}, "mutated": [], "tampered": []}).encode()
    os.write(int(sys.argv[-1]), struct.pack("!i", len(header)) + header)
    return out
