"""NVRTC: CUDA C++ (inline PTX allowed) to PTX for a target's virtual architecture, with no CUDA
toolkit installed (the library comes from the ``nvidia-cuda-nvrtc`` wheel)."""

from __future__ import annotations

import threading
from typing import Any

from warpgym.env.toolchain.errors import CompileError
from warpgym.env.toolchain.tools import nvrtc_version

_LOCK = threading.Lock()
"""One NVRTC program at a time: candidate threads may build modules concurrently."""


def compile_cuda(
    source: str, name: str, target: str, flags: list[str], expressions: list[str]
) -> tuple[str, str, dict[str, str]]:
    """CUDA C++ to PTX: the PTX, NVRTC's log, and the lowered symbol of each name expression."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - cuda-python is a dependency
        raise CompileError("nvrtc", name, target, f"cuda-python is not installed: {exc}") from exc
    if nvrtc_version() is None:
        raise CompileError(
            "nvrtc",
            name,
            target,
            "the NVRTC library (libnvrtc.so) cannot be loaded here; "
            "install it with `pip install nvidia-cuda-nvrtc` (CUDA 13) or set CUDA_HOME",
        )
    with _LOCK:
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
        _check(err, "nvrtcCreateProgram", name, target)
        try:
            for expr in expressions:
                nvrtc.nvrtcAddNameExpression(prog, expr.encode())
            opts = [f.encode() for f in flags]
            (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            # NVRTC writes into the buffer it is given: a bytearray of our own, never a bytes object (b" " * 1
            # is CPython's shared one-byte b" ", which NVRTC's empty log would overwrite process-wide).
            buf = bytearray(size)
            nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.rstrip(b"\x00").decode(errors="replace").strip()
            if int(err) != 0:
                raise CompileError("nvrtc", name, target, log or f"NVRTC error {err!r}")
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            buf = bytearray(size)
            nvrtc.nvrtcGetPTX(prog, buf)
            ptx = buf.rstrip(b"\x00").decode()
            lowered = {}
            for expr in expressions:
                err, low = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
                if int(err) == 0:
                    lowered[expr] = low.decode() if isinstance(low, bytes) else str(low)
        finally:
            nvrtc.nvrtcDestroyProgram(prog)
    return ptx, log, lowered


def _check(err: Any, what: str, name: str, target: str) -> None:
    if int(err) != 0:
        raise CompileError("nvrtc", name, target, f"{what} failed: {err!r}")
