"""Finding the CUDA tools on this machine: ptxas, cuobjdump, the CUDA headers and NVRTC.

No CUDA toolkit is required: Triton's wheel ships ptxas and cuobjdump, and NVRTC comes from the
``nvidia-cuda-nvrtc`` wheel. A CUDA install (CUDA_HOME, /usr/local/cuda) is used when present.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path


def _cuda_homes() -> list[str]:
    return [h for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if h]


@cache
def tool(name: str) -> str | None:
    """A CUDA binary tool: Triton's wheel first (it ships them), then CUDA_HOME, then PATH."""
    candidates = []
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)
    except ImportError:  # pragma: no cover - triton is a dependency
        pass
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            candidates.append(Path(home) / "bin" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which(name)


@cache
def tool_version(path: str) -> tuple[int, int]:
    """A CUDA tool's release (``13.0``) from its ``--version``; (0, 0) when it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@cache
def ptxas_candidates() -> tuple[str, ...]:
    """Every ptxas found (Triton's wheel, its Blackwell build, CUDA_HOME, /usr/local/cuda, PATH)."""
    found: list[str] = []
    wheel = tool("ptxas")
    names = [wheel] if wheel else []
    if wheel:
        names.append(str(Path(wheel).with_name("ptxas-blackwell")))
    names += [str(Path(home) / "bin" / "ptxas") for home in _cuda_homes()]
    for name in names:
        if name and Path(name).is_file() and os.access(name, os.X_OK) and name not in found:
            found.append(name)
    return tuple(found)


def ptxas_path() -> str | None:
    """The newest ptxas available: it accepts the newest PTX and every target we build for."""
    candidates = ptxas_candidates()
    return max(candidates, key=tool_version) if candidates else None


@cache
def include_dirs() -> tuple[str, ...]:
    """Header folders for NVRTC (cuda_bf16.h, cuda_fp8.h, ...): the CUDA install, then Triton's wheel."""
    dirs = [str(Path(home) / "include") for home in _cuda_homes()
            if (Path(home) / "include" / "cuda_runtime.h").is_file()]
    wheel = tool("ptxas")
    if wheel:
        inc = Path(wheel).parent.parent / "include"
        if (inc / "cuda_bf16.h").is_file():
            dirs.append(str(inc))
    return tuple(dict.fromkeys(dirs))


def nvrtc_version() -> tuple[int, int] | None:
    """NVRTC's version, or None when its library cannot be loaded here."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001 - a missing library shows as any of several errors
        return None
    return (major, minor) if int(err) == 0 else None
