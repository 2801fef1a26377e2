"""The loader for CUDA C++ and PTX candidate modules, on cuda-python.

A PTX task's candidate builds its kernels here: ``load_cuda`` compiles CUDA C++ (inline PTX
allowed) with NVRTC to PTX, then ptxas to a cubin; ``load_ptx`` assembles raw PTX with ptxas
(or leaves it to the driver's JIT). Compilation needs no GPU, so a candidate that builds its
modules at import is compiled, reported on and disassembled on any machine. Kernels are launched
with torch tensors on the current PyTorch stream. Without a GPU a launch is checked (arguments,
block, shared memory, cluster) and then refused with ``NoDeviceError``.

This is the only part of warpgym a candidate may import. ``attachment(name)`` reads a source file that
travelled with the candidate (``warpgym.env.candidate.Candidate``).
"""

from warpgym.env.toolchain.attachments import attachment
from warpgym.env.toolchain.loader import (
    CompileError,
    Kernel,
    LaunchError,
    LoaderError,
    Module,
    NoDeviceError,
    TensorMap,
    default_target,
    load_cuda,
    load_ptx,
    tensor_map,
)

__all__ = [
    "CompileError", "Kernel", "LaunchError", "LoaderError", "Module", "NoDeviceError", "TensorMap",
    "attachment", "default_target", "load_cuda", "load_ptx", "tensor_map",
]
