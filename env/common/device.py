"""Devices: which one evaluates, and the measured ceilings that speeds are compared with.

Ceilings are measured figures (on the H200 machine, 2026-11-29), not datasheet numbers, so a
fraction of the roofline near 1.0 means "as fast as the best library moves data or does
arithmetic on this card".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Ceilings:
    name: str
    bandwidth_gbps: float
    """Device-memory bandwidth, GB/s (bytes read plus written)."""
    tflops: dict[str, float]
    """Dense arithmetic ceilings, TFLOP/s, by input dtype."""
    source: str

    def without_tensor_cores(self, dtype: str) -> float:
        """The most dense arithmetic, TFLOP/s, this card does on CUDA cores alone: the FP32 FMA rate
        (``tflops["float32"]``, which no tensor core serves), twice that for 16-bit and 8-bit floats (packed
        half-precision FMAs, what an 8-bit input is widened to) and four times for int8 (dp4a)."""
        fp32 = self.tflops["float32"]
        return fp32 * (1 if dtype == "float32" else 4 if dtype == "int8" else 2)


KNOWN_CEILINGS = {
    "H200": Ceilings("NVIDIA H200", 4240.0,
                     {"bfloat16": 777.0, "float16": 777.0, "float8_e4m3fn": 1404.0, "float32": 67.0,
                      "int8": 1404.0},
                     "the highest measured on the H200 machine (copy 4.24 TB/s, cuBLAS bf16 8192^3, "
                     "cuBLASLt fp8 8192^3; a 4096^3 ceiling, 718, was beaten by a Triton matmul at 762)"),
    "H100": Ceilings("NVIDIA H100", 3350.0,
                     {"bfloat16": 777.0, "float16": 777.0, "float8_e4m3fn": 1404.0, "float32": 67.0,
                      "int8": 1404.0},
                     "H200 arithmetic ceilings with the H100 datasheet bandwidth (not measured here)"),
    "B200": Ceilings("NVIDIA B200", 8000.0,
                     {"bfloat16": 2250.0, "float16": 2250.0, "float8_e4m3fn": 4500.0, "float32": 80.0,
                      "int8": 4500.0},
                     "datasheet leads, not measured here"),
}


def resolve_device(device: str = "auto") -> str:
    """``auto`` picks ``cuda`` when a GPU is visible, else ``cpu``; a bad name is an error."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked for, but no CUDA GPU is visible here; "
                             "use --device cpu")
        return device
    raise ValueError(f"unknown device {device!r}; use cpu, cuda or cuda:N")


def physical_gpu(index: int) -> str:
    """The id of visible GPU ``index`` as the machine numbers it (``CUDA_VISIBLE_DEVICES`` resolved):
    what a child process is pinned to, and what names a GPU's lock for every process on the host."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return visible[index] if index < len(visible) else str(index)


RESERVED_LIMIT = 4 << 30
"""Cached GPU memory a process may keep between evaluations: several evaluators share a GPU, and the
caching allocator would otherwise hold every bench case's inputs and outputs for good."""


def release_cached_memory(device: str, empty_cache=torch.cuda.empty_cache,
                          reserved=torch.cuda.memory_reserved) -> None:
    """Give cached GPU memory back above ``RESERVED_LIMIT``. The torch functions are bound when this module
    is imported, before a worker loads any candidate, so a candidate that patches them changes nothing."""
    if device.startswith("cuda") and torch.cuda.is_initialized() and \
            reserved(torch.device(device)) > RESERVED_LIMIT:
        empty_cache()


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu (Triton interpreter)"


def ceilings_for(device: str) -> Ceilings | None:
    if not device.startswith("cuda"):
        return None
    name = device_name(device)
    return next((c for key, c in KNOWN_CEILINGS.items() if key in name), None)


def roofline_ms(ceilings: Ceilings, flops: int, nbytes: int, dtype: str) -> float:
    """The least time the device could take: arithmetic or memory, whichever binds."""
    peak = ceilings.tflops.get(dtype, ceilings.tflops["float32"])
    return max(flops / (peak * 1e9), nbytes / (ceilings.bandwidth_gbps * 1e6))
