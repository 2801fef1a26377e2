"""Architecture-specific GEMMs (PTXBench's shapes): bf16, and fp8 e4m3 with per-tensor scales.

C = A @ B^T with A (M, K) and B (N, K) both row-major (K contiguous): the layout tensor cores
and TMA want for both operands. The kernel must be written in CUDA C++/PTX through
``warpgym.loader`` and, on sm_90a, use wgmma fed by TMA (tcgen05 and TMA on sm_100a).
"""

from __future__ import annotations

import torch
from warpgym.env.toolchain.targets import TARGETS

from ..registry import register
from ..spec import Task, Tolerance

REQUIRED = {t.name: (t.tensor_cores, "tma") for t in TARGETS.values()}
"""Each target's own tensor-core instructions, fed by TMA."""

_GEMM_NOTES = """
A and B are contiguous and 16-byte aligned; M, N and K are multiples of 16 but often not of your
tiles (the heldout sizes are not). Build kernels with warpgym.loader (load_cuda for CUDA C++
with inline PTX, load_ptx for PTX); loader.tensor_map(tensor, box, swizzle=128) makes TMA
descriptors to pass by value. The instruction check counts what the GPU executed, not only what
was compiled: a wgmma or TMA path that never runs does not count, nor one that runs beside the real
computation (the tensor-core instructions must do at least 90% of the flops, all other instructions
together run at most one per four flops, the operands come through TMA).
"""


def _gemm_case(m: int, n: int, k: int) -> dict[str, int]:
    return {"m": m, "n": n, "k": k}


def _gemm_inputs(case, s):
    return {
        "a": s.tensor((case["m"], case["k"]), "bfloat16"),
        "b": s.tensor((case["n"], case["k"]), "bfloat16"),
    }


def _gemm_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b.T


register(
    Task(
        id="ptx/gemm-bf16",
        suite="ptx",
        language="cuda",
        entrypoint="gemm",
        signature="def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
        description="""
C = A @ B^T for bfloat16 A of shape (M, K) and B of shape (N, K), accumulated in float32 and
returned as a new contiguous (M, N) bfloat16 tensor. The bench shape is PTXBench's: M=8192,
N=7168, K=5120; cuBLAS (torch.matmul) is the baseline to beat.
""",
        reference=_gemm_reference,
        make_inputs=_gemm_inputs,
        shapes={
            "dev": [_gemm_case(256, 256, 256), _gemm_case(512, 384, 640), _gemm_case(128, 768, 1024)],
            "heldout": [_gemm_case(272, 208, 336), _gemm_case(1040, 528, 1104), _gemm_case(16, 1024, 2048)],
            "bench": [_gemm_case(8192, 7168, 5120)],
        },
        dtypes=("bfloat16",),
        tolerances={
            "bfloat16": Tolerance(
                2e-2, 2e-2, 1e-2, "fp32 accumulation; bf16 output rounding (4e-3) dominates"
            )
        },
        flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
        bytes=lambda c: 2 * (c["m"] * c["k"] + c["n"] * c["k"] + c["m"] * c["n"]),
        distributions=("normal", "uniform"),
        seeds=(0, 1),
        required_features=REQUIRED,
        baselines=("eager",),
        vendor=lambda a, b: torch.matmul(a, b.T),
        vendor_name="cuBLAS (torch.matmul)",
        reference_precision="float64",
        notes=_GEMM_NOTES,
        extra_solutions=("ptx/gemm-bf16-cuda",),
    )
)


_FP8_TOLERANCE = Tolerance(
    2e-2,
    2e-2,
    1e-2,
    "e4m3 inputs are exact and the bf16 output is compared; fp32 (or "
    "Hopper's fp8 accumulator) sums; bf16 output rounding (4e-3) dominates",
)


def _fp8_inputs(case, s):
    # Values within e4m3's range (max 448); the scales bring products back to O(1).
    a = s.tensor((case["m"], case["k"]), "float32", scale=4.0).clamp(-448, 448).to(torch.float8_e4m3fn)
    b = s.tensor((case["n"], case["k"]), "float32", scale=4.0).clamp(-448, 448).to(torch.float8_e4m3fn)
    scale_a = s.uniform((1,), 0.02, 0.05)
    scale_b = s.uniform((1,), 0.02, 0.05)
    return {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b}


def _fp8_reference(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
) -> torch.Tensor:
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):  # meta pass: shape and dtype of the answer
        a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
        return ((a @ b.T) * scale_a * scale_b).to(torch.bfloat16)
    return ((a @ b.T) * scale_a * scale_b).to(a.dtype)


def _fp8_vendor(
    a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor
) -> torch.Tensor:
    return torch._scaled_mm(a, b.T, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)


register(
    Task(
        id="ptx/gemm-fp8",
        suite="ptx",
        language="cuda",
        entrypoint="gemm_fp8",
        signature=(
            "def gemm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor)"
            " -> torch.Tensor"
        ),
        description="""
C = (A @ B^T) * scale_a * scale_b for float8_e4m3fn A of shape (M, K) and B of shape (N, K), with
per-tensor float32 scales given as one-element tensors; accumulate in float32 and return a new
contiguous (M, N) bfloat16 tensor. Bench shape M=8192, N=7168, K=5120; the baseline is cuBLASLt
through torch._scaled_mm. On sm_90a the fp8 wgmma (QGMMA) takes both operands K-major, as given.
""",
        reference=_fp8_reference,
        make_inputs=_fp8_inputs,
        shapes={
            "dev": [_gemm_case(256, 256, 256), _gemm_case(512, 384, 640), _gemm_case(128, 768, 1024)],
            "heldout": [_gemm_case(272, 208, 336), _gemm_case(1040, 528, 1104), _gemm_case(16, 1024, 2048)],
            "bench": [_gemm_case(8192, 7168, 5120)],
        },
        dtypes=("float8_e4m3fn",),
        tolerances={"bfloat16": _FP8_TOLERANCE, "float8_e4m3fn": _FP8_TOLERANCE},
        flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
        bytes=lambda c: c["m"] * c["k"] + c["n"] * c["k"] + 2 * c["m"] * c["n"],
        distributions=("normal", "uniform"),
        seeds=(0, 1),
        required_features=REQUIRED,
        baselines=(),
        vendor=_fp8_vendor,
        vendor_name="cuBLASLt (torch._scaled_mm)",
        reference_precision="float64",
        notes=_GEMM_NOTES,
        extra_solutions=("ptx/gemm-fp8-cuda",),
    )
)
