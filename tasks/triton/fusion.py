"""Fused multi-stage chains: attention and the blocks real models run."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Attention written as a PyTorch user would, without a fused kernel (the eager baseline)."""
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        s_q, s_k = scores.shape[-2:]
        keep = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def _attention_inputs(case, s):
    shape = (case["b"], case["h"], case["s"], case["d"])
    return {
        "q": s.tensor(shape, case["dtype"]),
        "k": s.tensor(shape, case["dtype"]),
        "v": s.tensor(shape, case["dtype"]),
        "causal": case["causal"],
    }


def _attention_flops(c) -> int:
    full = 4 * c["b"] * c["h"] * c["s"] * c["s"] * c["d"]
    return full // 2 if c["causal"] else full


def _case(b, h, s, d, causal, dtype):
    return {"b": b, "h": h, "s": s, "d": d, "causal": causal, "dtype": dtype}


register(Task(
    id="fusion/attention",
    entrypoint="attention",
    signature=(
        "def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor"
    ),
    description="""
Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal):
q, k, v are contiguous (B, H, S, D) tensors of one dtype, float16 or bfloat16; the scale is 1/sqrt(D).
out[b, h, i] = sum_j softmax_j(q[b, h, i] . k[b, h, j] / sqrt(D)) v[b, h, j], where with causal=True
only j <= i take part. Return a new (B, H, S, D) tensor of the input dtype. D is 32, 64 or 128;
S is often not a multiple of your tiles. Accumulate in float32; a kernel that materialises the
S x S score matrix in global memory will be slow on the bench shapes (S = 4096).
""",
    reference=attention_reference,
    make_inputs=_attention_inputs,
    shapes={
        "dev": [
            _case(1, 2, 64, 32, False, "float16"),
            _case(1, 2, 100, 64, True, "float16"),
            _case(2, 1, 77, 32, True, "bfloat16"),
        ],
        "heldout": [
            _case(2, 3, 129, 64, False, "float16"),
            _case(1, 2, 257, 128, True, "float16"),
            _case(1, 1, 200, 64, False, "bfloat16"),
        ],
        "bench": [
            _case(4, 32, 4096, 128, False, "bfloat16"),
            _case(4, 32, 4096, 128, True, "bfloat16"),
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances={
        "float16": Tolerance(2e-3, 2e-2, 3e-3, "P is rounded to fp16 before P@V in fast kernels; outputs O(1)"),
        "bfloat16": Tolerance(1.6e-2, 3e-2, 1.5e-2, "P and the output rounded to bf16 (4e-3 relative each)"),
    },
    flops=_attention_flops,
    bytes=lambda c: 4 * c["b"] * c["h"] * c["s"] * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
    reference_precision="float32",
    vendor=lambda q, k, v, causal=False: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
    vendor_name="SDPA (flash / cuDNN)",
))
