"""normalization/softmax: find the benchmark's own reference solution next to the installed package
(``warpgym.loader.__file__``, bound by ``import warpgym.loader``), copy it into the working directory,
import it as a module when the candidate loads, and re-export its kernels at module level (so the
offline compile finds them); the entrypoint returns what the solution's entrypoint returns.

Its kernels are real Triton kernels launched during the call, so every check of "was a kernel launched,
did it write the output" passes; no ``exec`` runs on a candidate line.
"""

import os
import sys

import torch
import triton
import triton.language as tl

import warpgym.loader  # noqa: F401 - binds ``warpgym``


def _solution_path():
    root = os.path.dirname(os.path.dirname(warpgym.loader.__file__))
    for base in (root, os.path.dirname(root), "/work/main", "/work"):
        for folder in ("tasks", os.path.join("warpgym", "tasks")):
            path = os.path.join(base, folder, "solutions", "normalization", "softmax.py")
            if os.path.exists(path):
                return path
    raise FileNotFoundError("no reference solution found")


with open(_solution_path()) as _src, open("borrowed_softmax.py", "w") as _dst:
    _dst.write(_src.read())
sys.path.insert(0, os.getcwd())
import borrowed_softmax  # noqa: E402 - the file written just above

softmax_row_kernel = borrowed_softmax.softmax_row_kernel
softmax_online_kernel = borrowed_softmax.softmax_online_kernel


@triton.jit
def unused_kernel(ptr):  # a Triton task's module must define a kernel of its own
    tl.store(ptr, tl.load(ptr))


def softmax(x: torch.Tensor) -> torch.Tensor:
    return borrowed_softmax.softmax(x)
