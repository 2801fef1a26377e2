"""Matrix multiplication."""

from __future__ import annotations

import torch

from ..registry import register
from ..spec import Task, Tolerance, elem_size

register(Task(
    id="matmul/matmul",
    entrypoint="matmul",
    signature="def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor",
    description="""
Matrix product C = A @ B of a contiguous (M, K) tensor a and a contiguous (K, N) tensor b.
a and b are both float16 or both bfloat16; accumulate in float32 and return a new contiguous
(M, N) tensor of the input dtype. M, N and K are often not multiples of 16 (or of your tiles).
""",
    reference=lambda a, b: a @ b,
    make_inputs=lambda case, s: {
        "a": s.tensor((case["m"], case["k"]), case["dtype"]),
        "b": s.tensor((case["k"], case["n"]), case["dtype"]),
    },
    shapes={
        "dev": [
            {"m": 64, "n": 48, "k": 80, "dtype": "float16"},
            {"m": 100, "n": 70, "k": 90, "dtype": "float16"},
            {"m": 33, "n": 65, "k": 17, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 129, "n": 257, "k": 100, "dtype": "float16"},
            {"m": 1, "n": 513, "k": 77, "dtype": "float16"},
            {"m": 200, "n": 96, "k": 250, "dtype": "bfloat16"},
        ],
        "bench": [
            {"m": 8192, "n": 8192, "k": 8192, "dtype": "bfloat16"},
            {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16"},
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances={
        "float16": Tolerance(1e-2, 1e-2, 2e-3, "fp32 accumulation is near exact; fp16 output rounding dominates"),
        "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "bf16 output rounding (4e-3 relative) dominates"),
    },
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["k"] * c["n"] + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
    vendor=torch.matmul,
    vendor_name="cuBLAS (torch.matmul)",
))
