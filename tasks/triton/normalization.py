"""Softmax and normalization layers."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

register(Task(
    id="normalization/softmax",
    entrypoint="softmax",
    signature="def softmax(x: torch.Tensor) -> torch.Tensor",
    description="""
Softmax over the last dimension of a contiguous 2-D tensor x of shape (M, N):
out[i, j] = exp(x[i, j] - max_k x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k]).
x is float32 or float16; return a new tensor of the same shape and dtype. Accumulate in
float32. Rows can be long and N is often not a power of two. Inputs include large values
(around 50, up to several hundred) where exp overflows without the max subtraction.
""",
    reference=lambda x: torch.softmax(x, dim=-1),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [
            {"m": 4, "n": 100, "dtype": "float32"},
            {"m": 8, "n": 1000, "dtype": "float16"},
            {"m": 3, "n": 2048, "dtype": "float32"},
        ],
        "heldout": [
            {"m": 1, "n": 1, "dtype": "float32"},
            {"m": 17, "n": 3001, "dtype": "float16"},
            {"m": 64, "n": 781, "dtype": "float32"},
        ],
        "bench": [
            {"m": 16384, "n": 8192, "dtype": "float16"},
            {"m": 8192, "n": 8191, "dtype": "float32"},
        ],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-6, 1e-4, 1e-5, "outputs in [0, 1]; one exp and one division per element"),
        "float16": Tolerance(1e-4, 1e-2, 2e-3, "fp16 output rounding dominates (5e-4 relative)"),
    },
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _layer_norm_inputs(case, s):
    n = case["n"]
    return {
        "x": s.tensor((case["m"], n), case["dtype"]),
        "weight": s.normal((n,), case["dtype"], mean=1.0, std=0.5),
        "bias": s.normal((n,), case["dtype"], std=0.5),
        "eps": 1e-5,
    }


register(Task(
    id="normalization/layer-norm",
    entrypoint="layer_norm",
    signature=(
        "def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, "
        "eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Layer normalization over the last dimension, as torch.nn.functional.layer_norm(x, (N,), weight, bias, eps):
x is a contiguous (M, N) tensor, weight and bias are (N,); for each row,
out = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance (divide by N).
x, weight and bias share one dtype, float32 or float16; return a new (M, N) tensor of that dtype.
Accumulate in float32. Inputs include rows with a large mean (about 50), where the one-pass
E[x^2] - E[x]^2 formula loses precision, and N = 1 (the output is then the bias).
""",
    reference=lambda x, weight, bias, eps=1e-5: F.layer_norm(x, (x.shape[-1],), weight, bias, eps),
    make_inputs=_layer_norm_inputs,
    shapes={
        "dev": [
            {"m": 4, "n": 100, "dtype": "float32"},
            {"m": 16, "n": 768, "dtype": "float16"},
            {"m": 5, "n": 1000, "dtype": "float32"},
        ],
        "heldout": [
            {"m": 3, "n": 1, "dtype": "float32"},
            {"m": 33, "n": 1537, "dtype": "float16"},
            {"m": 128, "n": 4095, "dtype": "float32"},
        ],
        "bench": [
            {"m": 16384, "n": 8192, "dtype": "float16"},
            {"m": 8192, "n": 4096, "dtype": "float32"},
        ],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-4, 1e-4, 1e-5, "outputs O(1); mean and variance reorderings cost ~1e-6"),
        "float16": Tolerance(4e-3, 1e-2, 2e-3, "fp16 output rounding (5e-4 relative) times |weight| up to ~3"),
    },
    flops=lambda c: 8 * c["m"] * c["n"],
    bytes=lambda c: (2 * c["m"] * c["n"] + 2 * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))
