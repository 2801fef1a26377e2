"""Fused multi-stage chains: attention and the blocks real models run."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        causal: bool = False) -> torch.Tensor:
    """Attention written as a PyTorch user would, without a fused kernel (the eager baseline)."""
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        s_q, s_k = scores.shape[-2:]
        keep = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def _flash_note(figures: str) -> str:
    """Why the flash-attention forwards stay under 0.8x of cuDNN: measured figures, then what was tried."""
    return (
        f"{figures} on the H100, 2026-12-06 (no H200 could be had; `warpgym suite check --device "
        "cuda`, paired timing; scripts/triton_ref_sweep.py, timing each side in its own blocks, read "
        "0.79-0.82x at 434-492 TFLOP/s). Tried: 128x64 tiles with 8 warps and 3 stages, 64x64 with 4 "
        "and 2; exp2 with the scale folded; masks on the diagonal and ragged blocks only; K and V "
        "through TMA descriptors (0.75x against 0.81x for pointer loads in the same window); Triton "
        "3.6's warp specialisation (it lowers on Hopper only with 4 warps, TMA loads and one loop, "
        "and did not finish within the sweep's cap). Likely cause, not profiled: Hopper attention "
        "kernels in the FlashAttention-3 style overlap one warpgroup's softmax with the other's wgmma "
        "(ping-pong scheduling), which Triton's software pipeline does not do"
    )


def _attention_inputs(case, s):
    shape = (case["b"], case["h"], case["s"], case["d"])
    return {
        "q": s.tensor(shape, case["dtype"]),
        "k": s.tensor(shape, case["dtype"]),
        "v": s.without_outliers(shape, case["dtype"]),
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
        "def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) "
        "-> torch.Tensor"
    ),
    description="""
Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal):
q, k, v are contiguous (B, H, S, D) tensors of one dtype, float16 or bfloat16; the scale is 1/sqrt(D).
out[b, h, i] = sum_j softmax_j(q[b, h, i] . k[b, h, j] / sqrt(D)) v[b, h, j], where with causal=True
only j <= i take part. Return a new (B, H, S, D) tensor of the input dtype. D is 32, 64 or 128;
S is often not a multiple of your tiles. Accumulate in float32; a kernel that materialises the
S x S score matrix in global memory will be slow on the bench shapes (S = 4096).
""",
    performance_note=_flash_note(
        "0.75x of cuDNN (2.149 ms non-causal, 1.228 ms causal: 512"
        " and 448 TFLOP/s)"),
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
        "float16": Tolerance(2e-3, 2e-2, 3e-3,
                             "P is rounded to fp16 before P@V in fast kernels; outputs O(1)"),
        "bfloat16": Tolerance(1.6e-2, 3e-2, 1.5e-2, "P and the output rounded to bf16 (4e-3 relative each)"),
    },
    flops=_attention_flops,
    bytes=lambda c: 4 * c["b"] * c["h"] * c["s"] * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
    reference_precision="float32",
    vendor=lambda q, k, v, causal=False: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
    vendor_name="SDPA (flash / cuDNN)",
))


# ---------------------------------------------------------------------------------------------------------
# Shared pieces of the tasks below.
#
# FLOP convention: every add, multiply, compare, max and every transcendental (exp, erf, tanh, rsqrt) counts
# as one; a matmul of (M, K) by (K, N) counts 2 * M * N * K. Bytes are the compulsory traffic: every input
# read once and every output written once.

_HALF = ("float16", "bfloat16")
_GEMM_TOL = {
    "float16": Tolerance(2e-3, 1e-2, 2e-3, "fp32 accumulation; one fp16 rounding of O(1) outputs"),
    "bfloat16": Tolerance(1.6e-2, 2e-2, 1e-2, "fp32 accumulation; one bf16 rounding of O(1) outputs"),
}
_TWO_GEMM_TOL = {
    "float16": Tolerance(3e-3, 1e-2, 3e-3, "the fp16 hidden activation is rounded (5e-4) before GEMM 2"),
    "bfloat16": Tolerance(2.4e-2, 3e-2, 1.5e-2, "the bf16 hidden activation is rounded (4e-3) before GEMM 2"),
}
_ACT_FLOPS = {"relu": 1, "gelu_tanh": 9, "gelu": 5, "silu": 4}


def _acc(t: torch.Tensor) -> torch.dtype:
    """float32 for half inputs; float64 stays float64 when the harness upcasts for the reference."""
    return torch.promote_types(t.dtype, torch.float32)


def _weight(s, rows: int, cols: int, dtype: str) -> torch.Tensor:
    """An nn.Linear-style (rows, cols) weight scaled by 1/sqrt(cols) so outputs stay O(1) in fp16."""
    return s.normal((rows, cols), dtype, std=cols ** -0.5)


def _gemm_case(m: int, n: int, k: int, dtype: str) -> dict:
    return {"m": m, "n": n, "k": k, "dtype": dtype}


_GEMM_SHAPES = {
    "dev": [_gemm_case(64, 48, 80, "float16"), _gemm_case(37, 100, 72, "float16"),
            _gemm_case(33, 65, 17, "bfloat16")],
    "heldout": [_gemm_case(129, 257, 100, "float16"), _gemm_case(1, 200, 77, "float16"),
                _gemm_case(200, 96, 250, "bfloat16"),
                _gemm_case(128, 128, 96, "float16")],  # whole tiles: a kernel's unmasked path runs here too
    "bench": [_gemm_case(8192, 8192, 8192, "bfloat16"), _gemm_case(4096, 11008, 4096, "float16")],
}


# ---------------------------------------------------------------------------------------------------------
# GEMM with a fused epilogue: linear + bias + activation / residual.

def _linear_inputs(case, s, residual: bool = False):
    m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
    inputs = {"x": s.tensor((m, k), dt), "weight": _weight(s, n, k, dt), "bias": s.normal((n,), dt, std=0.5)}
    if residual:
        inputs["residual"] = s.tensor((m, n), dt)
    return inputs


_GELU_NOTE = ("The tanh form and the exact erf form of gelu differ by at most ~5e-4, below one "
              "half-precision ulp of these outputs, so either passes (cuBLASLt uses the tanh form).")


def _register_linear(name: str, act: str, formula: str, reference, vendor=None, vendor_name=None) -> None:
    residual = act == "residual"
    extra = ", residual: torch.Tensor" if residual else ""
    entry = name.replace("-", "_")
    register(Task(
        id=f"fusion/{name}",
        entrypoint=entry,
        signature=(f"def {entry}(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor{extra}) "
                   "-> torch.Tensor"),
        description=f"""
A linear layer with its epilogue fused into the GEMM: {formula}.
x is a contiguous (M, K) tensor, weight is (N, K) (the nn.Linear layout: the product is x @ weight.T), bias
is (N,){", residual is a contiguous (M, N) tensor" if residual else ""}; all share one dtype, float16 or
bfloat16. Accumulate in float32, apply the epilogue to the float32 accumulator and round once to the input
dtype; return a new contiguous (M, N) tensor. M, N and K are often not multiples of your tiles; M can be 1.
The bench shapes are large GEMMs (up to 8192^3): use tl.dot on tiles big enough for tensor cores.
""",
        reference=reference,
        make_inputs=lambda case, s: _linear_inputs(case, s, residual),
        shapes=_GEMM_SHAPES,
        dtypes=_HALF,
        tolerances=_GEMM_TOL,
        flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + c["m"] * c["n"] * (1 + _ACT_FLOPS.get(act, 1)),
        bytes=lambda c: (c["m"] * c["k"] + c["n"] * c["k"] + c["n"]
                         + c["m"] * c["n"] * (2 if residual else 1)) * elem_size(c["dtype"]),
        distributions=("normal", "outliers"),  # two runs per case keep the CPU check short
        vendor=vendor,
        vendor_name=vendor_name,
        notes=_GELU_NOTE if act == "gelu_tanh" else "",
    ))


_register_linear(
    "linear-bias-relu", "relu", "out = relu(x @ weight.T + bias), as torch.relu(F.linear(x, weight, bias))",
    lambda x, weight, bias: torch.relu(F.linear(x, weight, bias)),
    vendor=lambda x, weight, bias: torch._addmm_activation(bias, x, weight.t()),
    vendor_name="cuBLASLt GEMM with RELU_BIAS epilogue (torch._addmm_activation)",
)
_register_linear(
    "linear-bias-gelu", "gelu_tanh",
    "out = gelu(x @ weight.T + bias) with the tanh approximation, as F.gelu(F.linear(x, weight, bias), "
    "approximate='tanh'); gelu(y) = 0.5 * y * (1 + tanh(sqrt(2/pi) * (y + 0.044715 * y^3)))",
    lambda x, weight, bias: F.gelu(F.linear(x, weight, bias), approximate="tanh"),
    vendor=lambda x, weight, bias: torch._addmm_activation(bias, x, weight.t(), use_gelu=True),
    vendor_name="cuBLASLt GEMM with GELU_BIAS epilogue (torch._addmm_activation)",
)
_register_linear(
    "linear-bias-silu", "silu",
    "out = silu(x @ weight.T + bias) = y * sigmoid(y), as F.silu(F.linear(x, weight, bias))",
    lambda x, weight, bias: F.silu(F.linear(x, weight, bias)),
)
_register_linear(
    "linear-bias-residual", "residual",
    "out = x @ weight.T + bias + residual, as F.linear(x, weight, bias) + residual (a transformer block's "
    "output projection added to the residual stream)",
    lambda x, weight, bias, residual: F.linear(x, weight, bias) + residual,
)


# ---------------------------------------------------------------------------------------------------------
# Gated and plain MLPs.

def _mlp_case(m: int, h: int, f: int, dtype: str) -> dict:
    return {"m": m, "h": h, "f": f, "dtype": dtype}


_MLP_SHAPES = {
    "dev": [_mlp_case(64, 48, 80, "float16"), _mlp_case(33, 72, 100, "float16"),
            _mlp_case(17, 33, 40, "bfloat16")],
    "heldout": [_mlp_case(129, 104, 200, "float16"), _mlp_case(1, 77, 130, "float16"),
                _mlp_case(100, 120, 96, "bfloat16"),
                _mlp_case(128, 128, 192, "float16")],  # whole tiles: a kernel's unmasked path runs here too
    "bench": [_mlp_case(8192, 4096, 14336, "bfloat16"), _mlp_case(4096, 4096, 11008, "float16")],
}


def _gated_inputs(case, s, down: bool):
    m, h, f, dt = case["m"], case["h"], case["f"], case["dtype"]
    inputs = {"x": s.tensor((m, h), dt), "w_gate": _weight(s, f, h, dt), "w_up": _weight(s, f, h, dt)}
    if down:
        inputs["w_down"] = _weight(s, h, f, dt)
    return inputs


register(Task(
    id="fusion/gated-mlp",
    entrypoint="gated_mlp",
    signature="def gated_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor",
    description="""
The gated half of a SwiGLU MLP (Llama, Mistral): out = silu(x @ w_gate.T) * (x @ w_up.T), as
F.silu(F.linear(x, w_gate)) * F.linear(x, w_up). x is a contiguous (M, H) tensor; w_gate and w_up are
(F, H) (nn.Linear layout); all float16 or bfloat16. silu(g) = g * sigmoid(g). Compute both products for
the same output tile in one kernel (x is read once), accumulate in float32, apply silu(g) * u in float32
and round once; return a new contiguous (M, F) tensor of the input dtype. Sizes are often not multiples
of your tiles; M can be 1.
""",
    reference=lambda x, w_gate, w_up: F.silu(F.linear(x, w_gate)) * F.linear(x, w_up),
    make_inputs=lambda case, s: _gated_inputs(case, s, down=False),
    shapes=_MLP_SHAPES,
    dtypes=_HALF,
    tolerances=_GEMM_TOL,
    flops=lambda c: 4 * c["m"] * c["f"] * c["h"] + 5 * c["m"] * c["f"],
    bytes=lambda c: (c["m"] * c["h"] + 2 * c["f"] * c["h"] + c["m"] * c["f"]) * elem_size(c["dtype"]),
    distributions=("normal", "outliers"),
))

register(Task(
    id="fusion/swiglu-mlp",
    entrypoint="swiglu_mlp",
    signature=(
        "def swiglu_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, "
        "w_down: torch.Tensor) -> torch.Tensor"
    ),
    description="""
A whole SwiGLU MLP block (Llama, Mistral, Qwen): out = (silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T, as
F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down). x is a contiguous (M, H) tensor, w_gate
and w_up are (F, H), w_down is (H, F) (nn.Linear layouts); all float16 or bfloat16. The gated hidden
activation may be stored in the input dtype between the two GEMMs (as the eager chain does); accumulate
both GEMMs in float32. Return a new contiguous (M, H) tensor of the input dtype. Sizes are often not
multiples of your tiles; M can be 1.
""",
    reference=lambda x, w_gate, w_up, w_down: F.linear(
        F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down),
    make_inputs=lambda case, s: _gated_inputs(case, s, down=True),
    shapes=_MLP_SHAPES,
    dtypes=_HALF,
    tolerances=_TWO_GEMM_TOL,
    flops=lambda c: 6 * c["m"] * c["f"] * c["h"] + 5 * c["m"] * c["f"],
    bytes=lambda c: (2 * c["m"] * c["h"] + 3 * c["f"] * c["h"]) * elem_size(c["dtype"]),
    # No outliers: x100 inputs make hidden values ~1e4 whose fp16 rounding (as in the eager chain) dominates.
    distributions=("normal", "uniform"),
))


def _mlp_gelu_inputs(case, s):
    m, h, f, dt = case["m"], case["h"], case["f"], case["dtype"]
    return {"x": s.tensor((m, h), dt), "w1": _weight(s, f, h, dt), "b1": s.normal((f,), dt, std=0.5),
            "w2": _weight(s, h, f, dt), "b2": s.normal((h,), dt, std=0.5)}


register(Task(
    id="fusion/mlp-gelu",
    entrypoint="mlp_gelu",
    signature=(
        "def mlp_gelu(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, "
        "b2: torch.Tensor) -> torch.Tensor"
    ),
    description="""
The GPT-2 / BERT feed-forward block: out = gelu(x @ w1.T + b1) @ w2.T + b2 with the tanh approximation of
gelu, as F.linear(F.gelu(F.linear(x, w1, b1), approximate='tanh'), w2, b2);
gelu(y) = 0.5 * y * (1 + tanh(sqrt(2/pi) * (y + 0.044715 * y^3))). x is a contiguous (M, H) tensor, w1 is
(F, H), b1 (F,), w2 (H, F), b2 (H,); all float16 or bfloat16. Fuse bias and gelu into the first GEMM's
epilogue and the bias into the second's; the hidden activation may be stored in the input dtype.
Accumulate in float32; return a new contiguous (M, H) tensor of the input dtype.
""",
    reference=lambda x, w1, b1, w2, b2: F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2),
    make_inputs=_mlp_gelu_inputs,
    shapes={
        "dev": _MLP_SHAPES["dev"],
        "heldout": _MLP_SHAPES["heldout"],
        "bench": [_mlp_case(8192, 4096, 16384, "bfloat16"), _mlp_case(4096, 4096, 16384, "float16")],
    },
    dtypes=_HALF,
    tolerances=_TWO_GEMM_TOL,
    flops=lambda c: 4 * c["m"] * c["f"] * c["h"] + 10 * c["m"] * c["f"] + c["m"] * c["h"],
    bytes=lambda c: (2 * c["m"] * c["h"] + 2 * c["f"] * c["h"] + c["f"] + c["h"]) * elem_size(c["dtype"]),
    # No outliers: x100 inputs make hidden values ~1e4 whose fp16 rounding (as in the eager chain) dominates.
    distributions=("normal", "uniform"),
    notes=_GELU_NOTE,
))


# ---------------------------------------------------------------------------------------------------------
# Normalisation feeding a GEMM (pre-norm transformer blocks).

def _norm_linear_inputs(case, s, rms: bool):
    m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
    inputs = {"x": s.tensor((m, k), dt, scale=case.get("scale", 1.0)),
              "norm_weight": s.normal((k,), dt, mean=1.0, std=0.3)}
    if not rms:
        inputs["norm_bias"] = s.normal((k,), dt, std=0.3)
    inputs["weight"] = _weight(s, n, k, dt)
    if not rms:
        inputs["bias"] = s.normal((n,), dt, std=0.5)
    inputs["eps"] = case.get("eps", 1e-5 if not rms else 1e-6)
    return inputs


_NORM_GEMM_TOL = {
    "float16": Tolerance(4e-3, 1e-2, 3e-3, "the normalised row is rounded to fp16 (5e-4) for the MMA"),
    "bfloat16": Tolerance(3e-2, 3e-2, 1.5e-2, "the normalised row is rounded to bf16 (4e-3) for the MMA"),
}

register(Task(
    id="fusion/layer-norm-linear",
    entrypoint="layer_norm_linear",
    signature=(
        "def layer_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, norm_bias: torch.Tensor, "
        "weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Layer norm followed by a linear layer, as F.linear(F.layer_norm(x, (K,), norm_weight, norm_bias, eps),
weight, bias): x is a contiguous (M, K) tensor, norm_weight and norm_bias are (K,), weight is (N, K)
(nn.Linear layout), bias (N,); all float16 or bfloat16. Layer norm uses the biased variance over the K
features of each row, computed in float32 (rows can have a mean of about 50; prefer a two-pass or Welford
variance to E[x^2] - E[x]^2). Apply the normalisation while loading the GEMM's A tiles (or in a
prologue kernel), accumulate in float32 and return a new contiguous (M, N) tensor of the input dtype.
Inputs include rows whose variance is below eps.
""",
    performance_note=(
        "0.75x (bf16) and 0.82x (fp16) of eager (ATen's layer norm, then cuBLAS) on the H200, "
        "2026-12-01 (scripts/triton_ref_sweep.py, four tile configs). The reference writes the "
        "normalised rows once and runs a Triton GEMM, which alone reaches 0.95-0.97x cuBLAS at these "
        "sizes (matmul/matmul); where the rest goes is not profiled yet"
    ),
    reference=lambda x, norm_weight, norm_bias, weight, bias, eps=1e-5: F.linear(
        F.layer_norm(x, (x.shape[-1],), norm_weight, norm_bias, eps), weight, bias),
    make_inputs=lambda case, s: _norm_linear_inputs(case, s, rms=False),
    shapes={
        "dev": _GEMM_SHAPES["dev"],
        "heldout": [*_GEMM_SHAPES["heldout"],
                    # variance 1e-6 against eps = 1e-5: eps under the root or beside it differ by 3x
                    _gemm_case(9, 40, 96, "float16") | {"scale": 1e-3},
                    _gemm_case(9, 40, 96, "float16") | {"eps": 10.0}],  # variances ~100: a constant eps fails
        "bench": [_gemm_case(8192, 8192, 4096, "bfloat16"), _gemm_case(4096, 12288, 4096, "float16")],
    },
    dtypes=_HALF,
    tolerances=_NORM_GEMM_TOL,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + 8 * c["m"] * c["k"] + c["m"] * c["n"],
    bytes=lambda c: (c["m"] * c["k"] + 2 * c["k"] + c["n"] * c["k"] + c["n"] + c["m"] * c["n"])
    * elem_size(c["dtype"]),
    distributions=("large", "outliers"),
))

register(Task(
    id="fusion/rms-norm-linear",
    entrypoint="rms_norm_linear",
    signature=(
        "def rms_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor, "
        "eps: float = 1e-6) -> torch.Tensor"
    ),
    description="""
RMS norm followed by a bias-free linear layer (a Llama block's input norm and projection), as
F.linear(F.rms_norm(x, (K,), norm_weight, eps), weight): x is a contiguous (M, K) tensor, norm_weight is
(K,), weight is (N, K) (nn.Linear layout); all float16 or bfloat16.
rms_norm(x) = x / sqrt(mean(x^2) + eps) * norm_weight, the mean over the K features of each row, in float32.
Apply the normalisation while loading the GEMM's A tiles (or in a prologue kernel), accumulate in float32
and return a new contiguous (M, N) tensor of the input dtype. Inputs include rows whose mean(x^2) is below
eps.
""",
    reference=lambda x, norm_weight, weight, eps=1e-6: F.linear(
        F.rms_norm(x, (x.shape[-1],), norm_weight, eps), weight),
    make_inputs=lambda case, s: _norm_linear_inputs(case, s, rms=True),
    shapes={
        "dev": _GEMM_SHAPES["dev"],
        # mean(x^2) ~1e-7 against eps = 1e-6: eps under the root or beside it differ by 3x
        "heldout": [*_GEMM_SHAPES["heldout"], _gemm_case(9, 40, 96, "float16") | {"scale": 3e-4},
                    # mean(x^2) ~0.01-0.3 against eps = 0.1: a kernel with a constant eps fails
                    _gemm_case(9, 40, 96, "float16") | {"scale": 0.01, "eps": 0.1}],
        "bench": [_gemm_case(8192, 8192, 4096, "bfloat16"), _gemm_case(4096, 12288, 4096, "float16")],
    },
    dtypes=_HALF,
    tolerances=_NORM_GEMM_TOL,
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + 4 * c["m"] * c["k"],
    bytes=lambda c: (c["m"] * c["k"] + c["k"] + c["n"] * c["k"] + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("large", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Fused QKV projection with the head split and transpose in the epilogue.

def _qkv_reference(x, weight, bias, n_heads: int, n_kv_heads: int):
    b, s, _ = x.shape
    d = weight.shape[0] // (n_heads + 2 * n_kv_heads)
    qkv = F.linear(x, weight, bias)
    q, k, v = qkv.split([n_heads * d, n_kv_heads * d, n_kv_heads * d], dim=-1)
    return tuple(t.reshape(b, s, -1, d).transpose(1, 2).contiguous() for t in (q, k, v))


def _qkv_case(b: int, s: int, e: int, hq: int, hkv: int, d: int, dtype: str) -> dict:
    return {"b": b, "s": s, "e": e, "hq": hq, "hkv": hkv, "d": d, "dtype": dtype}


def _qkv_inputs(case, s):
    rows = (case["hq"] + 2 * case["hkv"]) * case["d"]
    dt = case["dtype"]
    return {"x": s.tensor((case["b"], case["s"], case["e"]), dt), "weight": _weight(s, rows, case["e"], dt),
            "bias": s.normal((rows,), dt, std=0.5), "n_heads": case["hq"], "n_kv_heads": case["hkv"]}


def _qkv_flops(c) -> int:
    return (2 * c["e"] + 1) * c["b"] * c["s"] * (c["hq"] + 2 * c["hkv"]) * c["d"]


def _qkv_bytes(c) -> int:
    rows = (c["hq"] + 2 * c["hkv"]) * c["d"]
    return (c["b"] * c["s"] * c["e"] + rows * c["e"] + rows + c["b"] * c["s"] * rows) * elem_size(c["dtype"])


register(Task(
    id="fusion/qkv-projection",
    entrypoint="qkv_projection",
    signature=(
        "def qkv_projection(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, n_heads: int, "
        "n_kv_heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]"
    ),
    description="""
The fused QKV projection of an attention layer, with the split into heads done in the GEMM's epilogue.
x is a contiguous (B, S, E) tensor; weight is ((n_heads + 2 * n_kv_heads) * D, E) (nn.Linear layout: the
rows are the q heads, then the k heads, then the v heads, each D rows), bias matches its rows; all float16 or
bfloat16. D = weight.shape[0] // (n_heads + 2 * n_kv_heads). Compute qkv = x @ weight.T + bias in float32 and
return (q, k, v), new contiguous tensors of shapes (B, n_heads, S, D), (B, n_kv_heads, S, D) and
(B, n_kv_heads, S, D) in the input dtype, exactly
    q, k, v = F.linear(x, weight, bias).split([n_heads * D, n_kv_heads * D, n_kv_heads * D], -1)
    q = q.reshape(B, S, n_heads, D).transpose(1, 2).contiguous()   # likewise k and v
n_kv_heads can be smaller than n_heads (grouped-query attention).
""",
    reference=_qkv_reference,
    make_inputs=_qkv_inputs,
    shapes={
        "dev": [_qkv_case(1, 20, 64, 4, 2, 16, "float16"), _qkv_case(2, 33, 48, 2, 2, 32, "float16"),
                _qkv_case(1, 17, 40, 2, 1, 16, "bfloat16")],
        "heldout": [_qkv_case(3, 17, 96, 6, 2, 16, "float16"), _qkv_case(1, 65, 128, 4, 4, 32, "float16"),
                    _qkv_case(2, 40, 72, 4, 1, 32, "bfloat16")],
        "bench": [_qkv_case(4, 4096, 4096, 32, 8, 128, "bfloat16"),
                  _qkv_case(8, 2048, 4096, 32, 32, 128, "float16")],
    },
    dtypes=_HALF,
    tolerances=_GEMM_TOL,
    flops=_qkv_flops,
    bytes=_qkv_bytes,
    distributions=("normal", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Residual adds fused with normalisation.

_ALL = ("float32", "float16", "bfloat16")
_NORM_TOL = {
    "float32": Tolerance(1e-4, 1e-4, 1e-5, "outputs O(1); fp32 mean/variance reorderings cost ~1e-6"),
    "float16": Tolerance(4e-3, 1e-2, 2e-3, "fp16 output rounding (5e-4 relative) times |weight| up to ~3"),
    "bfloat16": Tolerance(3e-2, 3e-2, 1.5e-2, "bf16 output rounding (4e-3 relative) times |weight| up to ~3"),
}


def _row_case(m: int, n: int, dtype: str) -> dict:
    return {"m": m, "n": n, "dtype": dtype}


_ROW_SHAPES = {
    "dev": [_row_case(4, 100, "float32"), _row_case(16, 768, "float16"), _row_case(8, 512, "bfloat16")],
    "heldout": [_row_case(3, 1, "float32"), _row_case(33, 1537, "float16"), _row_case(64, 781, "bfloat16"),
                _row_case(4, 100, "float32") | {"eps": 50.0}],  # mean(h^2) reaches 1e4: a constant eps fails
    "bench": [_row_case(16384, 8192, "bfloat16"), _row_case(16384, 4096, "float16"),
              _row_case(8192, 4096, "float32")],
}


# Layer-norm shapes: the fp32 offset cases shift x by +100 (mean/std ~ 70), where the one-pass E[x^2] - E[x]^2
# loses ~1e-3 of the variance in float32 and fails, while a two-pass or Welford kernel stays near 1e-5.
_LN_SHAPES = {
    "dev": [_row_case(4, 100, "float32") | {"offset": 100.0}, _row_case(16, 768, "float16"),
            _row_case(8, 512, "bfloat16")],
    "heldout": [_row_case(3, 1, "float32"), _row_case(33, 1537, "float16"), _row_case(64, 781, "bfloat16"),
                _row_case(8, 300, "float32") | {"offset": 100.0},
                # every summand scaled by 1e-3: variance ~2e-6 against eps = 1e-5, where eps under the root
                # or beside it differ by 2.4x
                _row_case(3, 257, "float32") | {"scale": 1e-3},
                # eps = 1 against variances up to ~200 (the large distribution): a constant eps fails
                _row_case(4, 100, "float32") | {"eps": 1.0}],
    "bench": _ROW_SHAPES["bench"],
}


def _add_norm_inputs(case, s, rms: bool):
    m, n, dt = case["m"], case["n"], case["dtype"]
    scale = case.get("scale", 1.0)
    inputs = {"x": s.tensor((m, n), dt, scale=scale, offset=case.get("offset", 0.0)),
              "residual": s.tensor((m, n), dt, scale=scale),
              "weight": s.normal((n,), dt, mean=1.0, std=0.5)}
    if not rms:
        inputs["bias"] = s.normal((n,), dt, std=0.5)
    inputs["eps"] = case.get("eps", 1e-6 if rms else 1e-5)
    return inputs


def _add_layer_norm_reference(x, residual, weight, bias, eps=1e-5):
    h = x + residual
    return h, F.layer_norm(h, (h.shape[-1],), weight, bias, eps)


register(Task(
    id="fusion/add-layer-norm",
    entrypoint="add_layer_norm",
    signature=(
        "def add_layer_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, "
        "bias: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Residual add fused with layer norm, the pre-norm transformer's "add & norm": h = x + residual, and
y = F.layer_norm(h, (N,), weight, bias, eps). Return (h, y), both new contiguous (M, N) tensors of the input
dtype: h is the updated residual stream, y feeds the next block. x and residual are contiguous (M, N),
weight and bias (N,); all share one dtype, float32, float16 or bfloat16. Mean and biased variance over the N
features of each row, in float32; rows can have a large mean (about 100 after the add), where
E[x^2] - E[x]^2 loses precision, and rows whose variance is below eps. Normalising the float32 sum or the
rounded h both pass. N can be 1 (then y is the bias).
""",
    reference=_add_layer_norm_reference,
    make_inputs=lambda case, s: _add_norm_inputs(case, s, rms=False),
    shapes=_LN_SHAPES,
    dtypes=_ALL,
    tolerances={
        "float32": _NORM_TOL["float32"],
        "float16": Tolerance(1e-2, 1e-2, 2e-3, "y may normalise the rounded h: ulp(h)/2 / std * |w| ~ 6e-3 "
                             "at mean 100, std 14"),
        "bfloat16": Tolerance(8e-2, 3e-2, 1.5e-2, "y may use the rounded h: ulp(100)/2 / 14 * |w| ~ 5e-2"),
    },
    flops=lambda c: 9 * c["m"] * c["n"],
    bytes=lambda c: (4 * c["m"] * c["n"] + 2 * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _add_rms_norm_reference(x, residual, weight, eps=1e-6):
    h = x + residual
    return h, F.rms_norm(h, (h.shape[-1],), weight, eps)


register(Task(
    id="fusion/add-rms-norm",
    entrypoint="add_rms_norm",
    signature=(
        "def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Residual add fused with RMS norm (Llama's "add & norm"): h = x + residual and
y = F.rms_norm(h, (N,), weight, eps) = h / sqrt(mean(h^2) + eps) * weight, the mean over the N features of
each row in float32. Return (h, y), both new contiguous (M, N) tensors of the input dtype. x and residual
are contiguous (M, N), weight (N,); all share one dtype, float32, float16 or bfloat16. N can be 1.
""",
    reference=_add_rms_norm_reference,
    make_inputs=lambda case, s: _add_norm_inputs(case, s, rms=True),
    shapes=_ROW_SHAPES,
    dtypes=_ALL,
    tolerances=_NORM_TOL,
    flops=lambda c: 6 * c["m"] * c["n"],
    bytes=lambda c: (4 * c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _bias_residual_ln_inputs(case, s):
    m, n, dt = case["m"], case["n"], case["dtype"]
    scale = case.get("scale", 1.0)
    return {"x": s.tensor((m, n), dt, scale=scale, offset=case.get("offset", 0.0)),
            "bias": s.normal((n,), dt, std=0.5 * scale), "residual": s.tensor((m, n), dt, scale=scale),
            "norm_weight": s.normal((n,), dt, mean=1.0, std=0.5), "norm_bias": s.normal((n,), dt, std=0.5),
            "eps": case.get("eps", 1e-5)}


register(Task(
    id="fusion/bias-residual-layer-norm",
    entrypoint="bias_residual_layer_norm",
    signature=(
        "def bias_residual_layer_norm(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, "
        "norm_weight: torch.Tensor, norm_bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
The post-norm (BERT) block ending: a dense layer's bias, the residual add and layer norm in one pass,
y = F.layer_norm(x + bias + residual, (N,), norm_weight, norm_bias, eps) (dropout is off). x and residual
are contiguous (M, N); bias, norm_weight and norm_bias are (N,); all share one dtype, float32, float16 or
bfloat16. Form the sum in float32 and take the mean and biased variance over each row in float32; rows can
have a large mean (about 100), where E[x^2] - E[x]^2 loses precision, and rows can have a variance below
eps. Return a new contiguous (M, N) tensor of the input dtype. N can be 1 (then y is norm_bias).
""",
    reference=lambda x, bias, residual, norm_weight, norm_bias, eps=1e-5: F.layer_norm(
        x + bias + residual, (x.shape[-1],), norm_weight, norm_bias, eps),
    make_inputs=_bias_residual_ln_inputs,
    shapes=_LN_SHAPES,
    dtypes=_ALL,
    tolerances=_NORM_TOL,
    flops=lambda c: 10 * c["m"] * c["n"],
    bytes=lambda c: (3 * c["m"] * c["n"] + 3 * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _adaln_case(b: int, s: int, c: int, dtype: str) -> dict:
    return {"b": b, "s": s, "c": c, "dtype": dtype}


def _adaln_inputs(case, s):
    b, n, c, dt = case["b"], case["s"], case["c"], case["dtype"]
    return {"x": s.tensor((b, n, c), dt, scale=case.get("scale", 1.0)),
            "shift": s.normal((b, c), dt, std=0.5),
            "scale": s.normal((b, c), dt, std=0.5), "eps": case.get("eps", 1e-6)}


register(Task(
    id="fusion/adaln-modulate",
    entrypoint="adaln_modulate",
    signature=(
        "def adaln_modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor, eps: float = 1e-6) "
        "-> torch.Tensor"
    ),
    description="""
Adaptive layer norm with modulation, as in diffusion transformers (DiT):
y = F.layer_norm(x, (C,), eps=eps) * (1 + scale[:, None, :]) + shift[:, None, :]
(layer norm without its own affine parameters, then a per-sample scale and shift). x is a contiguous
(B, S, C) tensor; shift and scale are (B, C); all share one dtype, float32, float16 or bfloat16. Mean and
biased variance over the C features of each token, in float32; return a new contiguous (B, S, C) tensor of
the input dtype. Inputs include tokens whose variance is below eps.
""",
    reference=lambda x, shift, scale, eps=1e-6: (
        F.layer_norm(x, (x.shape[-1],), eps=eps) * (1 + scale[:, None, :]) + shift[:, None, :]),
    make_inputs=_adaln_inputs,
    shapes={
        "dev": [_adaln_case(2, 8, 96, "float32"), _adaln_case(2, 16, 384, "float16"),
                _adaln_case(1, 8, 256, "bfloat16")],
        "heldout": [_adaln_case(3, 7, 1000, "float32"), _adaln_case(2, 33, 1152, "float16"),
                    _adaln_case(2, 5, 200, "bfloat16"),
                    # variance 1e-8 against eps = 1e-6: eps under the root or beside it differ by 10x
                    _adaln_case(2, 3, 200, "float32") | {"scale": 1e-4},
                    _adaln_case(2, 3, 96, "float32") | {"eps": 0.1}],  # eps not the default: a constant fails
        "bench": [_adaln_case(16, 4096, 1152, "bfloat16"), _adaln_case(8, 4096, 3072, "float16")],
    },
    dtypes=_ALL,
    tolerances=_NORM_TOL,
    flops=lambda c: 10 * c["b"] * c["s"] * c["c"],
    bytes=lambda c: (2 * c["b"] * c["s"] * c["c"] + 2 * c["b"] * c["c"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _gn_case(b: int, c: int, h: int, w: int, groups: int, dtype: str) -> dict:
    return {"b": b, "c": c, "h": h, "w": w, "groups": groups, "dtype": dtype}


def _gn_inputs(case, s):
    c, dt = case["c"], case["dtype"]
    x = s.tensor((case["b"], c, case["h"], case["w"]), dt, scale=case.get("scale", 1.0),
                 offset=case.get("offset", 0.0))
    return {"x": x, "num_groups": case["groups"], "weight": s.normal((c,), dt, mean=1.0, std=0.5),
            "bias": s.normal((c,), dt, std=0.5), "eps": case.get("eps", 1e-5)}


register(Task(
    id="fusion/group-norm-silu",
    entrypoint="group_norm_silu",
    signature=(
        "def group_norm_silu(x: torch.Tensor, num_groups: int, weight: torch.Tensor, bias: torch.Tensor, "
        "eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Group norm followed by SiLU, the start of every diffusion-UNet ResNet block:
y = F.silu(F.group_norm(x, num_groups, weight, bias, eps)). x is a contiguous (B, C, H, W) tensor, weight and
bias are (C,); all share one dtype, float32, float16 or bfloat16. Each (sample, group) normalises its
C / num_groups channels times H * W values together (mean and biased variance in float32; groups hold up
to ~100k values and can have a large mean, where E[x^2] - E[x]^2 loses precision), then applies the
per-channel weight and bias and silu(z) = z * sigmoid(z). Return a new contiguous tensor of x's shape and
dtype. C is a multiple of num_groups. Inputs include groups whose variance is below eps.
""",
    reference=lambda x, num_groups, weight, bias, eps=1e-5: F.silu(
        F.group_norm(x, num_groups, weight, bias, eps)),
    make_inputs=_gn_inputs,
    shapes={
        "dev": [_gn_case(2, 16, 4, 4, 4, "float32") | {"offset": 100.0}, _gn_case(2, 32, 8, 8, 8, "float16"),
                _gn_case(1, 8, 4, 4, 2, "bfloat16")],
        "heldout": [_gn_case(1, 12, 5, 7, 3, "float32") | {"offset": 100.0},
                    _gn_case(2, 64, 9, 9, 32, "float16"),
                    _gn_case(3, 16, 6, 6, 4, "bfloat16"),
                    # variance 1e-6 against eps = 1e-5: eps under the root or beside it differ by 3x
                    _gn_case(2, 8, 3, 5, 2, "float32") | {"scale": 1e-3},
                    # eps not the default: a constant fails
                    _gn_case(2, 8, 3, 5, 2, "float32") | {"eps": 0.1}],
        "bench": [_gn_case(16, 512, 64, 64, 32, "bfloat16"), _gn_case(8, 256, 128, 128, 32, "float16")],
    },
    dtypes=_ALL,
    tolerances={**_NORM_TOL, "float32": Tolerance(
        1e-4, 1e-4, 3e-5, "outputs O(1); with a mean of 100 and x100 outliers a group's variance is held to "
        "fp32 ulps of ~1e4: a two-pass kernel reached a relative L2 error of 8.9e-6, PyTorch's 1.2e-5 "
        "(300 draws)")},
    flops=lambda c: 12 * c["b"] * c["c"] * c["h"] * c["w"],
    bytes=lambda c: (2 * c["b"] * c["c"] * c["h"] * c["w"] + 2 * c["c"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _rms_quant_reference(x, weight, eps=1e-6):
    y = F.rms_norm(x, (x.shape[-1],), weight, eps)
    scale = y.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6) / 127
    q = torch.round(y / scale).clamp(-127, 127).to(torch.int8)
    return q, scale.squeeze(-1).to(torch.float32)


register(Task(
    id="fusion/rms-norm-quant",
    entrypoint="rms_norm_quant",
    signature=(
        "def rms_norm_quant(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
RMS norm fused with dynamic per-token int8 quantisation (the input side of a W8A8 linear layer):
    y = x / sqrt(mean(x^2) + eps) * weight          (per row, in float32; y is NOT rounded to x's dtype)
    scale = max(max_j |y[j]|, 1e-6) / 127            (one float32 scale per row)
    q = clamp(round_half_to_even(y / scale), -127, 127) as int8
Return (q, scale): q a new contiguous (M, N) int8 tensor, scale a new (M,) float32 tensor. x is a contiguous
(M, N) tensor and weight (N,), both float32, float16 or bfloat16. An element of q may differ by one from the
float64 reference where y / scale falls within rounding error of a half-integer.
""",
    reference=_rms_quant_reference,
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["n"]), case["dtype"]),
        "weight": s.normal((case["n"],), case["dtype"], mean=1.0, std=0.5), "eps": case.get("eps", 1e-6)},
    shapes={
        "dev": [_row_case(4, 100, "float32"), _row_case(16, 768, "float16"), _row_case(8, 512, "bfloat16")],
        "heldout": [_row_case(3, 1, "float32"), _row_case(33, 1537, "float16"),
                    _row_case(64, 781, "bfloat16"),
                    _row_case(4, 100, "float32") | {"eps": 1.0}],  # eps not the default: a constant fails
        "bench": [_row_case(16384, 8192, "bfloat16"), _row_case(16384, 4096, "float16")],
    },
    dtypes=_ALL,
    tolerances={
        "int8": Tolerance(1, 0.0, 1e-2, "one step where y/scale is within fp32 rounding of a half-integer"),
        # The scales are float32 whatever x's dtype; listed under each input dtype for the statement.
        **{d: Tolerance(1e-7, 1e-5, 1e-5, "float32 scale = amax/127 from an fp32 row reduction")
           for d in _ALL},
    },
    flops=lambda c: 8 * c["m"] * c["n"],
    bytes=lambda c: (c["m"] * c["n"] * (elem_size(c["dtype"]) + 1) + c["n"] * elem_size(c["dtype"])
                     + 4 * c["m"]),
    distributions=("normal", "large", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Rotary position embeddings.

def _rope_tables(s_len: int, dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (S, D/2) in float32: angle[p, i] = p * base^(-2i/D). Deterministic."""
    inv = base ** (-torch.arange(0, dim // 2, dtype=torch.float64) * 2 / dim)
    angle = torch.arange(s_len, dtype=torch.float64)[:, None] * inv[None, :]
    return angle.cos().float(), angle.sin().float()


def _rope_half(x, cos, sin):
    """Half-split (GPT-NeoX / Llama rotate_half) rotation of x (..., S, H, D) with cos, sin of (S, D/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def _rope_interleaved(x, cos, sin):
    """Interleaved (GPT-J / original Meta) rotation: pairs (x[2i], x[2i+1]) rotate by angle i."""
    pairs = x.unflatten(-1, (-1, 2))
    x1, x2 = pairs[..., 0], pairs[..., 1]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).flatten(-2).to(x.dtype)


def _rope_case(b: int, s: int, hq: int, hkv: int, d: int, dtype: str) -> dict:
    return {"b": b, "s": s, "hq": hq, "hkv": hkv, "d": d, "dtype": dtype}


def _rope_inputs(case, s, norm: bool = False):
    b, n, d, dt = case["b"], case["s"], case["d"], case["dtype"]
    cos, sin = _rope_tables(n, d)
    scale = case.get("scale", 1.0)
    inputs = {"q": s.tensor((b, n, case["hq"], d), dt, scale=scale),
              "k": s.tensor((b, n, case["hkv"], d), dt, scale=scale)}
    if norm:
        inputs["q_weight"] = s.normal((d,), dt, mean=1.0, std=0.3)
        inputs["k_weight"] = s.normal((d,), dt, mean=1.0, std=0.3)
    inputs.update({"cos": cos.to(s.device), "sin": sin.to(s.device)})
    if norm:
        inputs["eps"] = case.get("eps", 1e-6)
    return inputs


_ROPE_SHAPES = {
    "dev": [_rope_case(2, 16, 4, 2, 32, "float32"), _rope_case(1, 24, 4, 4, 64, "float16"),
            _rope_case(1, 8, 2, 1, 32, "bfloat16")],
    "heldout": [_rope_case(3, 13, 6, 2, 80, "float16"), _rope_case(1, 37, 2, 1, 128, "float32"),
                _rope_case(2, 9, 4, 2, 64, "bfloat16"),
                # head counts that are not powers of two: a head mask against the padded count shows
                _rope_case(1, 5, 6, 3, 32, "float32"), _rope_case(2, 3, 5, 5, 16, "float32")],
    "bench": [_rope_case(8, 4096, 32, 8, 128, "bfloat16"), _rope_case(16, 2048, 32, 32, 128, "float16")],
}
_ROPE_TOL = {
    "float32": Tolerance(1e-5, 1e-5, 1e-5, "two products and a sum per element in fp32"),
    "float16": Tolerance(2e-3, 1e-2, 2e-3, "one fp16 rounding of the rotated value (5e-4 relative)"),
    "bfloat16": Tolerance(1.6e-2, 2e-2, 1e-2, "one bf16 rounding of the rotated value (4e-3 relative)"),
}


def _rope_bytes(c) -> int:
    elems = c["b"] * c["s"] * (c["hq"] + c["hkv"]) * c["d"]
    return 2 * elems * elem_size(c["dtype"]) + 4 * c["s"] * c["d"]


_ROPE_COMMON = """
q is a contiguous (B, S, Hq, D) tensor and k a contiguous (B, S, Hkv, D) tensor (flash-attention's layout:
tokens, then heads), both float32, float16 or bfloat16; D is even (64, 80, 128, ...). cos and sin are
contiguous float32 (S, D/2) tables: cos[p, i] = cos(p * theta_i) for position p and frequency i. Compute in
float32 and return (q_rot, k_rot), new contiguous tensors of q's and k's shapes and dtypes.
"""

register(Task(
    id="fusion/rope",
    entrypoint="rope",
    signature=(
        "def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Rotary position embedding applied to queries and keys, the HALF-SPLIT convention (GPT-NeoX, Llama in Hugging
Face's rotate_half form): with x1 = x[..., :D/2] and x2 = x[..., D/2:], for the token at position p,
    out[..., :D/2] = x1 * cos[p] - x2 * sin[p],   out[..., D/2:] = x2 * cos[p] + x1 * sin[p].
""" + _ROPE_COMMON,
    reference=lambda q, k, cos, sin: (_rope_half(q, cos, sin), _rope_half(k, cos, sin)),
    make_inputs=_rope_inputs,
    shapes=_ROPE_SHAPES,
    dtypes=_ALL,
    tolerances=_ROPE_TOL,
    flops=lambda c: 3 * c["b"] * c["s"] * (c["hq"] + c["hkv"]) * c["d"],
    bytes=_rope_bytes,
    distributions=("normal", "uniform", "outliers"),
))

register(Task(
    id="fusion/rope-interleaved",
    entrypoint="rope_interleaved",
    signature=(
        "def rope_interleaved(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Rotary position embedding applied to queries and keys, the INTERLEAVED convention (GPT-J, the original Meta
Llama code): element pairs (x[2i], x[2i+1]) rotate by angle i, so for the token at position p,
    out[..., 2i]   = x[2i] * cos[p, i] - x[2i+1] * sin[p, i],
    out[..., 2i+1] = x[2i+1] * cos[p, i] + x[2i] * sin[p, i].
""" + _ROPE_COMMON,
    reference=lambda q, k, cos, sin: (_rope_interleaved(q, cos, sin), _rope_interleaved(k, cos, sin)),
    make_inputs=_rope_inputs,
    shapes=_ROPE_SHAPES,
    dtypes=_ALL,
    tolerances=_ROPE_TOL,
    flops=lambda c: 3 * c["b"] * c["s"] * (c["hq"] + c["hkv"]) * c["d"],
    bytes=_rope_bytes,
    distributions=("normal", "uniform", "outliers"),
))


def _qk_norm_rope_reference(q, k, q_weight, k_weight, cos, sin, eps=1e-6):
    d = q.shape[-1]
    qn = F.rms_norm(q, (d,), q_weight, eps)
    kn = F.rms_norm(k, (d,), k_weight, eps)
    return _rope_half(qn, cos, sin), _rope_half(kn, cos, sin)


register(Task(
    id="fusion/qk-norm-rope",
    entrypoint="qk_norm_rope",
    signature=(
        "def qk_norm_rope(q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor, "
        "cos: torch.Tensor, sin: torch.Tensor, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Per-head RMS norm of queries and keys followed by rotary embedding (Qwen3, OLMo 2, Gemma 3): every head
vector is normalised over its D features, x / sqrt(mean(x^2) + eps) * weight (q_weight for q, k_weight for
k, both (D,) of the input dtype), then rotated with the HALF-SPLIT convention: with x1 = x[..., :D/2] and
x2 = x[..., D/2:], for the token at position p,
    out[..., :D/2] = x1 * cos[p] - x2 * sin[p],   out[..., D/2:] = x2 * cos[p] + x1 * sin[p].
Keep the normalised value in float32 (do not round it before the rotation). Inputs include heads whose
mean(x^2) is below eps.
""" + _ROPE_COMMON,
    reference=_qk_norm_rope_reference,
    make_inputs=lambda case, s: _rope_inputs(case, s, norm=True),
    # mean(x^2) = 1e-8 against eps = 1e-6: eps under the root or beside it differ by 10x
    shapes=_ROPE_SHAPES | {"heldout": [*_ROPE_SHAPES["heldout"],
                                       _rope_case(1, 4, 2, 1, 32, "float32") | {"scale": 1e-4},
                                       # eps not the default: a constant fails
                                       _rope_case(1, 4, 2, 1, 32, "float32") | {"eps": 0.01}]},
    dtypes=_ALL,
    tolerances={
        "float32": Tolerance(1e-5, 1e-4, 1e-5, "fp32 sum of squares over D, then a rotation"),
        "float16": Tolerance(4e-3, 1e-2, 2e-3, "one fp16 rounding of outputs up to ~4 (|weight| ~ 1.9)"),
        "bfloat16": Tolerance(3e-2, 3e-2, 1.5e-2, "one bf16 rounding of outputs up to ~4 (|weight| ~ 1.9)"),
    },
    flops=lambda c: 7 * c["b"] * c["s"] * (c["hq"] + c["hkv"]) * c["d"],
    bytes=lambda c: _rope_bytes(c) + 2 * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Elementwise chains: gated activations, bias + activation, folded batch norm, embeddings, causal conv.

_ELEMENTWISE_TOL = {
    "float32": Tolerance(1e-5, 1e-5, 1e-5, "a few fp32 operations and one transcendental per element"),
    "float16": Tolerance(1e-3, 1e-2, 2e-3, "one fp16 rounding of the result (5e-4 relative)"),
    "bfloat16": Tolerance(8e-3, 2e-2, 1e-2, "one bf16 rounding of the result (4e-3 relative)"),
}


def _glu_inputs(case, s):
    return {"x": s.tensor((case["m"], 2 * case["n"]), case["dtype"])}


_GLU_SHAPES = {
    "dev": [_row_case(4, 100, "float32"), _row_case(16, 384, "float16"), _row_case(8, 256, "bfloat16")],
    "heldout": [_row_case(5, 1, "float32"), _row_case(33, 1377, "float16"), _row_case(17, 700, "bfloat16")],
    "bench": [_row_case(16384, 14336, "bfloat16"), _row_case(8192, 11008, "float16")],
}

register(Task(
    id="fusion/swiglu",
    entrypoint="swiglu",
    signature="def swiglu(x: torch.Tensor) -> torch.Tensor",
    description="""
The SwiGLU activation on a fused gate/up projection output (Megatron's layout): x is a contiguous (M, 2F)
tensor whose first F columns are the gate a and last F columns the value b, as a, b = x.chunk(2, dim=-1);
out = silu(a) * b = a * sigmoid(a) * b, computed in float32. x is float32, float16 or bfloat16; return a
new contiguous (M, F) tensor of x's dtype.
""",
    reference=lambda x: F.silu(x.chunk(2, dim=-1)[0]) * x.chunk(2, dim=-1)[1],
    make_inputs=_glu_inputs,
    shapes=_GLU_SHAPES,
    dtypes=_ALL,
    tolerances=_ELEMENTWISE_TOL,
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: 3 * c["m"] * c["n"] * elem_size(c["dtype"]),
    # No outliers: a product of two x100 values overflows fp16.
    distributions=("normal", "uniform", "large"),
))

register(Task(
    id="fusion/geglu",
    entrypoint="geglu",
    signature="def geglu(x: torch.Tensor) -> torch.Tensor",
    description="""
The GeGLU activation on a fused gate/up projection output: x is a contiguous (M, 2F) tensor whose first F
columns are the gate a and last F columns the value b, as a, b = x.chunk(2, dim=-1);
out = gelu(a) * b with the exact (erf) gelu, gelu(a) = 0.5 * a * (1 + erf(a / sqrt(2))), computed in
float32. x is float32, float16 or bfloat16; return a new contiguous (M, F) tensor of x's dtype.
""",
    reference=lambda x: F.gelu(x.chunk(2, dim=-1)[0]) * x.chunk(2, dim=-1)[1],
    make_inputs=_glu_inputs,
    shapes=_GLU_SHAPES,
    dtypes=_ALL,
    tolerances=_ELEMENTWISE_TOL,
    flops=lambda c: 6 * c["m"] * c["n"],
    bytes=lambda c: 3 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "large"),
))

register(Task(
    id="fusion/bias-gelu",
    entrypoint="bias_gelu",
    signature="def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor",
    description="""
Bias add fused with the exact gelu (Megatron's bias_gelu, dropout off): out = F.gelu(x + bias) with
gelu(z) = 0.5 * z * (1 + erf(z / sqrt(2))), computed in float32. x is a contiguous (M, N) tensor and bias
(N,), both float32, float16 or bfloat16; return a new contiguous (M, N) tensor of x's dtype.
""",
    reference=lambda x, bias: F.gelu(x + bias),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"]),
                                 "bias": s.normal((case["n"],), case["dtype"], std=0.5)},
    shapes={
        "dev": [_row_case(4, 100, "float32"), _row_case(16, 768, "float16"), _row_case(8, 512, "bfloat16")],
        "heldout": [_row_case(3, 1, "float32"), _row_case(33, 3001, "float16"),
                    _row_case(64, 781, "bfloat16")],
        "bench": [_row_case(16384, 16384, "bfloat16"), _row_case(8192, 16384, "float16")],
    },
    dtypes=_ALL,
    tolerances=_ELEMENTWISE_TOL,
    flops=lambda c: 6 * c["m"] * c["n"],
    bytes=lambda c: (2 * c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
))


def _nchw_case(b: int, c: int, h: int, w: int, dtype: str) -> dict:
    return {"b": b, "c": c, "h": h, "w": w, "dtype": dtype}


_NCHW_SHAPES = {
    "dev": [_nchw_case(2, 8, 5, 5, "float32"), _nchw_case(2, 16, 8, 8, "float16"),
            _nchw_case(1, 4, 6, 6, "bfloat16")],
    "heldout": [_nchw_case(3, 7, 9, 11, "float32"), _nchw_case(1, 64, 14, 14, "float16"),
                _nchw_case(2, 5, 3, 3, "bfloat16")],
    "bench": [_nchw_case(64, 256, 56, 56, "bfloat16"), _nchw_case(64, 512, 28, 28, "float16"),
              _nchw_case(32, 256, 56, 56, "float32")],
}


def _nchw_numel(c) -> int:
    return c["b"] * c["c"] * c["h"] * c["w"]


register(Task(
    id="fusion/bias-residual-relu",
    entrypoint="bias_residual_relu",
    signature=("def bias_residual_relu(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) "
               "-> torch.Tensor"),
    description="""
The end of a ResNet bottleneck block with batch norm folded into the convolution: a per-channel bias, the
identity shortcut and ReLU in one pass, out = relu(x + bias[None, :, None, None] + residual). x and
residual are contiguous (B, C, H, W) tensors (NCHW), bias is (C,); all share one dtype, float32, float16 or
bfloat16. Add in float32 and round once; return a new contiguous (B, C, H, W) tensor of the input dtype.
""",
    reference=lambda x, bias, residual: torch.relu(x + bias[None, :, None, None] + residual),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["b"], case["c"], case["h"], case["w"]), case["dtype"]),
        "bias": s.normal((case["c"],), case["dtype"], std=0.5),
        "residual": s.tensor((case["b"], case["c"], case["h"], case["w"]), case["dtype"]),
    },
    shapes=_NCHW_SHAPES,
    dtypes=_ALL,
    tolerances={
        "float32": Tolerance(1e-6, 1e-5, 1e-6, "two fp32 adds per element"),
        "float16": Tolerance(1e-3, 1e-2, 2e-3, "one fp16 rounding of the result (5e-4 relative)"),
        "bfloat16": Tolerance(8e-3, 2e-2, 1e-2, "one bf16 rounding of the result (4e-3 relative)"),
    },
    flops=lambda c: 3 * _nchw_numel(c),
    bytes=lambda c: 3 * _nchw_numel(c) * elem_size(c["dtype"]) + c["c"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
))

register(Task(
    id="fusion/scale-shift-silu",
    entrypoint="scale_shift_silu",
    signature=("def scale_shift_silu(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) "
               "-> torch.Tensor"),
    description="""
Inference batch norm folded to a per-channel affine map, followed by SiLU (EfficientNet, YOLO blocks):
out = F.silu(x * scale[None, :, None, None] + shift[None, :, None, None]). x is a contiguous (B, C, H, W)
tensor (NCHW) of float32, float16 or bfloat16; scale and shift are (C,) float32 (folded from the running
statistics). Compute in float32 and return a new contiguous (B, C, H, W) tensor of x's dtype.
""",
    reference=lambda x, scale, shift: F.silu(
        x * scale[None, :, None, None] + shift[None, :, None, None]).to(x.dtype),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["b"], case["c"], case["h"], case["w"]), case["dtype"]),
        "scale": s.normal((case["c"],), "float32", mean=1.0, std=0.5),
        "shift": s.normal((case["c"],), "float32", std=0.5),
    },
    shapes=_NCHW_SHAPES,
    dtypes=_ALL,
    tolerances=_ELEMENTWISE_TOL,
    flops=lambda c: 6 * _nchw_numel(c),
    bytes=lambda c: 2 * _nchw_numel(c) * elem_size(c["dtype"]) + 8 * c["c"],
    distributions=("normal", "uniform", "outliers"),
))


def _embed_case(b: int, s: int, v: int, p: int, d: int, dtype: str) -> dict:
    return {"b": b, "s": s, "v": v, "p": p, "d": d, "dtype": dtype}


register(Task(
    id="fusion/embedding-positional",
    entrypoint="embedding_positional",
    signature=(
        "def embedding_positional(ids: torch.Tensor, token_table: torch.Tensor, pos_table: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description="""
Token embedding lookup fused with learned absolute position embeddings (GPT-2, BERT):
out[b, s] = token_table[ids[b, s]] + pos_table[s], as F.embedding(ids, token_table) + pos_table[:S].
ids is a contiguous (B, S) int64 tensor of values in [0, V); token_table is a contiguous (V, D) tensor and
pos_table a contiguous (P, D) tensor with P >= S, both float32, float16 or bfloat16. Add in float32 and round
once; return a new contiguous (B, S, D) tensor of the tables' dtype.
""",
    reference=lambda ids, token_table, pos_table: F.embedding(ids, token_table) + pos_table[: ids.shape[1]],
    make_inputs=lambda case, s: {
        "ids": s.randint(0, case["v"], (case["b"], case["s"])),
        "token_table": s.tensor((case["v"], case["d"]), case["dtype"]),
        "pos_table": s.tensor((case["p"], case["d"]), case["dtype"]),
    },
    shapes={
        "dev": [_embed_case(2, 16, 100, 32, 64, "float32"), _embed_case(2, 20, 500, 64, 96, "float16"),
                _embed_case(1, 8, 50, 8, 32, "bfloat16")],
        "heldout": [_embed_case(3, 33, 1000, 40, 200, "float16"), _embed_case(1, 1, 7, 5, 1, "float32"),
                    _embed_case(2, 17, 300, 32, 48, "bfloat16")],
        "bench": [_embed_case(16, 4096, 50257, 4096, 2048, "bfloat16"),
                  _embed_case(32, 2048, 32000, 2048, 4096, "float16")],
    },
    dtypes=_ALL,
    tolerances={
        "float32": Tolerance(1e-6, 1e-6, 1e-6, "one fp32 add per element"),
        "float16": Tolerance(1e-3, 1e-2, 2e-3, "one fp16 rounding of the sum (5e-4 relative)"),
        "bfloat16": Tolerance(8e-3, 2e-2, 1e-2, "one bf16 rounding of the sum (4e-3 relative)"),
    },
    flops=lambda c: c["b"] * c["s"] * c["d"],
    bytes=lambda c: 8 * c["b"] * c["s"] + (2 * c["b"] * c["s"] + c["s"]) * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
))


def _conv_case(b: int, d: int, length: int, width: int, dtype: str) -> dict:
    return {"b": b, "d": d, "l": length, "w": width, "dtype": dtype}


register(Task(
    id="fusion/causal-conv1d-silu",
    entrypoint="causal_conv1d_silu",
    signature=("def causal_conv1d_silu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) "
               "-> torch.Tensor"),
    description="""
Mamba's short causal depthwise convolution followed by SiLU: every channel d is filtered on its own by a
causal filter of width W, out[b, d, t] = silu(bias[d] + sum_{j<W} weight[d, j] * x[b, d, t - W + 1 + j]) with
x taken as 0 before t = 0; exactly
F.silu(F.conv1d(x, weight[:, None, :], bias, padding=W - 1, groups=D)[..., :L]). x is a contiguous
(B, D, L) tensor, weight (D, W), bias (D,); all float32, float16 or bfloat16. W is 2 to 4. Accumulate in
float32; return a new contiguous (B, D, L) tensor of x's dtype.
""",
    reference=lambda x, weight, bias: F.silu(F.conv1d(
        x, weight[:, None, :], bias, padding=weight.shape[1] - 1, groups=x.shape[1])[..., : x.shape[2]]),
    make_inputs=lambda case, s: {
        "x": s.tensor((case["b"], case["d"], case["l"]), case["dtype"]),
        "weight": s.normal((case["d"], case["w"]), case["dtype"], std=case["w"] ** -0.5),
        "bias": s.normal((case["d"],), case["dtype"], std=0.5),
    },
    shapes={
        "dev": [_conv_case(2, 16, 40, 4, "float32"), _conv_case(1, 32, 64, 4, "float16"),
                _conv_case(1, 8, 16, 3, "bfloat16")],
        "heldout": [_conv_case(3, 20, 77, 3, "float16"), _conv_case(1, 5, 3, 4, "float32"),
                    _conv_case(2, 24, 50, 2, "bfloat16")],
        "bench": [_conv_case(8, 4096, 8192, 4, "bfloat16"), _conv_case(16, 2048, 4096, 4, "float32")],
    },
    dtypes=_ALL,
    tolerances=_ELEMENTWISE_TOL,
    flops=lambda c: c["b"] * c["d"] * c["l"] * (2 * c["w"] + 4),
    bytes=lambda c: (2 * c["b"] * c["d"] * c["l"] + c["d"] * (c["w"] + 1)) * elem_size(c["dtype"]),
    distributions=("normal", "uniform", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Attention variants. References are the unfused eager chain (scores, bias or mask, softmax, @ v) and keep
# the input dtype, so the harness can run them in float64. FLOPs count 4 * D per (query, key) pair that
# takes part (QK^T and PV).

_ATTN_TOL = {
    "float16": Tolerance(2e-3, 2e-2, 3e-3, "P is rounded to fp16 before P@V in fast kernels; outputs O(1)"),
    "bfloat16": Tolerance(1.6e-2, 3e-2, 1.5e-2, "P and the output rounded to bf16 (4e-3 relative each)"),
}


REFERENCE_SCORES_BYTES = 1 << 30
"""The most a float64 reference's score block may take."""


def _eager_attention(q, k, v, bias=None, keep=None, scale: float | None = None):
    """softmax(q k^T * scale + bias, masked where ~keep) @ v, in the inputs' dtype.

    In float64 (the judge's reference precision) a block of query rows at a time: at bench sizes the whole
    score matrix (32 GiB for 4 x 64 heads of 4096^2) does not fit an 80 GB card beside another evaluation,
    and query rows are independent, so the answer is the same. In other dtypes (the eager baseline, timed)
    it stays one call."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    rows = q.shape[-2]
    step = rows
    if q.dtype == torch.float64:
        heads = math.prod(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]))
        per_row = heads * k.shape[-2] * q.element_size()
        step = max(1, REFERENCE_SCORES_BYTES // per_row)
    if step >= rows:
        return _attention_rows(q, k, v, bias, keep, scale)
    return torch.cat([_attention_rows(q[..., i:i + step, :], k, v, _query_rows(bias, i, step, rows),
                                      _query_rows(keep, i, step, rows), scale)
                      for i in range(0, rows, step)], dim=-2)


def _query_rows(t: torch.Tensor | None, start: int, step: int, rows: int) -> torch.Tensor | None:
    """Rows ``start:start + step`` of a bias or mask whose second-to-last dimension is the queries'; one
    broadcast along the queries (a key-padding mask) is used whole."""
    if t is None or t.dim() < 2 or t.shape[-2] != rows:
        return t
    return t[..., start:start + step, :]


def _attention_rows(q, k, v, bias, keep, scale: float):
    scores = (q @ k.transpose(-1, -2)) * scale
    if bias is not None:
        scores = scores + bias
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1).to(v.dtype) @ v  # a float32 bias promotes the scores


def _causal_keep(s_q: int, s_k: int, device) -> torch.Tensor:
    return torch.ones(s_q, s_k, dtype=torch.bool, device=device).tril()


def _attn_case(b: int, h: int, s: int, d: int, dtype: str, **extra) -> dict:
    return {"b": b, "h": h, "s": s, "d": d, "dtype": dtype, **extra}


def _qkv(case, s, hkv: int | None = None, scale: float = 1.0) -> dict:
    """q, k and v from the case's distribution, outliers in q and k only: they belong in the scores, where a
    missing max subtraction shows; in v (x100) the allowed fp16 rounding of P (5e-4 of a weight) exceeded
    the output's tolerance about one draw in 200 (``Sampler.without_outliers``)."""
    b, h, n, d, dt = case["b"], case["h"], case["s"], case["d"], case["dtype"]
    kv = (b, hkv if hkv is not None else h, n, d)
    return {"q": s.tensor((b, h, n, d), dt, scale=scale), "k": s.tensor(kv, dt, scale=scale),
            "v": s.without_outliers(kv, dt)}


def _causal_pairs(s: int) -> int:
    return s * (s + 1) // 2


def _window_pairs(s: int, w: int) -> int:
    w = min(w, s)
    return w * (w + 1) // 2 + (s - w) * w


def _attn_bytes(c, kv_heads: int | None = None) -> int:
    kv = kv_heads if kv_heads is not None else c["h"]
    return (2 * c["h"] + 2 * kv) * c["b"] * c["s"] * c["d"] * elem_size(c["dtype"])


_ATTN_COMMON = """Accumulate in float32 and return a new contiguous tensor of q's shape and dtype; S is often
not a multiple of your tiles. Do not materialise the S x S score matrix in global memory: the bench shapes
(S = 4096 and more) make that slow."""


def _sliding_window_reference(q, k, v, window: int):
    s = q.shape[-2]
    i = torch.arange(s, device=q.device)
    keep = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
    return _eager_attention(q, k, v, keep=keep)


def _sliding_window_vendor(q, k, v, window: int):
    s = q.shape[-2]
    i = torch.arange(s, device=q.device)
    keep = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


register(Task(
    id="fusion/attention-sliding-window",
    entrypoint="attention_sliding_window",
    signature=(
        "def attention_sliding_window(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) "
        "-> torch.Tensor"
    ),
    description="""
Causal sliding-window attention (Mistral, Gemma 2 local layers): query i attends to keys j with
i - window < j <= i (itself and the window - 1 keys before it), with scale 1/sqrt(D):
out[b, h, i] = sum_j softmax_j(q[b, h, i] . k[b, h, j] / sqrt(D)) v[b, h, j] over those j.
q, k and v are contiguous (B, H, S, D) tensors of one dtype, float16 or bfloat16; D is 32, 64 or 128.
Skip key blocks entirely outside the window: the work should grow like S * window, not S^2.
""" + _ATTN_COMMON,
    reference=_sliding_window_reference,
    # A window of a few keys averages few values: with outlier values (x100) in v, P rounded to fp16 moved
    # an output near 0 by 0.004 in an honest kernel (1 of 4096 elements past the element-wise bound on one
    # draw), an error that scales with the largest v in the window, not with the output.
    make_inputs=lambda case, s: {**_qkv(case, s), "window": case["window"]},
    shapes={
        "dev": [_attn_case(1, 2, 64, 32, "float16", window=16),
                _attn_case(1, 2, 100, 64, "float16", window=33),
                _attn_case(2, 1, 77, 32, "bfloat16", window=20)],
        "heldout": [_attn_case(1, 3, 129, 64, "float16", window=50),
                    _attn_case(1, 1, 200, 128, "float16", window=1),
                    _attn_case(1, 2, 150, 64, "bfloat16", window=200)],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16", window=1024),
                  _attn_case(2, 32, 8192, 128, "float16", window=4096)],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: 4 * c["b"] * c["h"] * c["d"] * _window_pairs(c["s"], c["window"]),
    bytes=_attn_bytes,
    distributions=("normal", "outliers"),
    vendor=_sliding_window_vendor,
    vendor_name="SDPA with a boolean window mask",
))


def _alibi_slopes(h: int) -> torch.Tensor:
    """The ALiBi paper's geometric slopes 2^(-8 (i + 1) / H), float32 (H,)."""
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], dtype=torch.float32)


def _alibi_bias(slopes, s: int, device):
    i = torch.arange(s, device=device)
    return slopes[:, None, None] * (i[None, :] - i[:, None])[None].to(slopes.dtype)


def _alibi_reference(q, k, v, slopes):
    s = q.shape[-2]
    return _eager_attention(q, k, v, bias=_alibi_bias(slopes, s, q.device), keep=_causal_keep(s, s, q.device))


def _alibi_vendor(q, k, v, slopes):
    s = q.shape[-2]
    bias = _alibi_bias(slopes, s, q.device).masked_fill(~_causal_keep(s, s, q.device), float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))


register(Task(
    id="fusion/attention-alibi",
    entrypoint="attention_alibi",
    signature=(
        "def attention_alibi(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slopes: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description="""
Causal attention with ALiBi position biases (BLOOM, MPT): head h adds slopes[h] * (j - i) to the score of
query i and key j (a penalty growing with distance), then masks j > i:
out[b, h, i] = sum_{j <= i} softmax_j(q[b, h, i] . k[b, h, j] / sqrt(D) + slopes[h] * (j - i)) v[b, h, j].
q, k and v are contiguous (B, H, S, D) tensors of one dtype, float16 or bfloat16; slopes is a float32 (H,)
tensor. Compute the bias inside the kernel; do not build an (H, S, S) bias tensor.
""" + _ATTN_COMMON,
    reference=_alibi_reference,
    make_inputs=lambda case, s: {**_qkv(case, s), "slopes": _alibi_slopes(case["h"]).to(s.device)},
    shapes={
        "dev": [_attn_case(1, 2, 64, 32, "float16"), _attn_case(1, 2, 100, 64, "float16"),
                _attn_case(2, 2, 77, 32, "bfloat16")],
        "heldout": [_attn_case(1, 3, 129, 64, "float16"), _attn_case(1, 4, 150, 32, "float16"),
                    _attn_case(1, 2, 200, 64, "bfloat16")],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16"), _attn_case(8, 16, 2048, 128, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: 4 * c["b"] * c["h"] * c["d"] * _causal_pairs(c["s"]),
    bytes=_attn_bytes,
    distributions=("normal", "outliers"),
    vendor=_alibi_vendor,
    vendor_name="SDPA with a float (H, S, S) ALiBi + causal mask (mask built in the timed call)",
))


def _gqa_reference(q, k, v, causal: bool = False):
    group = q.shape[1] // k.shape[1]
    s = q.shape[-2]
    keep = _causal_keep(s, s, q.device) if causal else None
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return _eager_attention(q, k, v, keep=keep)


def _gqa_flops(c) -> int:
    pairs = _causal_pairs(c["s"]) if c["causal"] else c["s"] * c["s"]
    return 4 * c["b"] * c["h"] * c["d"] * pairs


register(Task(
    id="fusion/attention-gqa",
    entrypoint="attention_gqa",
    signature=(
        "def attention_gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) "
        "-> torch.Tensor"
    ),
    description="""
Grouped-query attention (Llama 2/3 70B, Mistral): q is a contiguous (B, Hq, S, D) tensor, k and v are
contiguous (B, Hkv, S, D) with Hq a multiple of Hkv; query head h uses key/value head h // (Hq / Hkv),
exactly as F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True), or as repeating each
k and v head Hq / Hkv times (repeat_interleave on dim 1) - without making those copies. Scale 1/sqrt(D);
with causal=True query i sees keys j <= i. All float16 or bfloat16; D is 64 or 128.
""" + _ATTN_COMMON,
    performance_note=_flash_note(
        "0.78x of cuDNN (1.192 ms causal bf16, 4.143 ms non-causal"
        " fp16: 461 and 531 TFLOP/s)"),
    reference=_gqa_reference,
    make_inputs=lambda case, s: {**_qkv(case, s, hkv=case["hkv"]), "causal": case["causal"]},
    shapes={
        "dev": [_attn_case(1, 4, 64, 64, "float16", hkv=2, causal=False),
                _attn_case(1, 4, 100, 64, "float16", hkv=1, causal=True),
                _attn_case(2, 4, 77, 64, "bfloat16", hkv=2, causal=True)],
        "heldout": [_attn_case(1, 6, 129, 64, "float16", hkv=2, causal=True),
                    _attn_case(1, 4, 150, 128, "float16", hkv=1, causal=False),
                    _attn_case(1, 4, 200, 64, "bfloat16", hkv=4, causal=True),
                    # 3 kv heads of 2 query heads each: neither count a power of two
                    _attn_case(1, 6, 33, 32, "float16", hkv=3, causal=True)],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16", hkv=8, causal=True),
                  _attn_case(4, 64, 4096, 128, "float16", hkv=8, causal=False)],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=_gqa_flops,
    bytes=lambda c: _attn_bytes(c, c["hkv"]),
    distributions=("normal", "outliers"),
    vendor=lambda q, k, v, causal=False: F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=True),
    vendor_name="SDPA with enable_gqa=True (flash / cuDNN)",
))


def _mqa_reference(q, k, v, causal: bool = False):
    s = q.shape[-2]
    keep = _causal_keep(s, s, q.device) if causal else None
    return _eager_attention(q, k[:, None], v[:, None], keep=keep)


def _mqa_inputs(case, s):
    b, h, n, d, dt = case["b"], case["h"], case["s"], case["d"], case["dtype"]
    return {"q": s.tensor((b, h, n, d), dt), "k": s.tensor((b, n, d), dt),
            "v": s.without_outliers((b, n, d), dt), "causal": case["causal"]}


register(Task(
    id="fusion/attention-mqa",
    entrypoint="attention_mqa",
    signature=(
        "def attention_mqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) "
        "-> torch.Tensor"
    ),
    description="""
Multi-query attention (PaLM, Falcon, StarCoder): every query head shares one key head and one value head.
q is a contiguous (B, H, S, D) tensor; k and v are contiguous (B, S, D) tensors (no head dimension);
out[b, h, i] = sum_j softmax_j(q[b, h, i] . k[b, j] / sqrt(D)) v[b, j], with causal=True restricting to
j <= i. All float16 or bfloat16; D is 64 or 128. The whole point is that k and v are read once for all
heads: load each key/value tile once and use it for several heads.
""" + _ATTN_COMMON,
    performance_note=_flash_note(
        "0.77x of cuDNN (1.194 ms causal bf16, 2.148 ms non-causal"
        " fp16: 460 and 512 TFLOP/s)"),
    reference=_mqa_reference,
    make_inputs=_mqa_inputs,
    shapes={
        "dev": [_attn_case(1, 4, 64, 64, "float16", causal=False),
                _attn_case(1, 2, 100, 64, "float16", causal=True),
                _attn_case(2, 4, 77, 64, "bfloat16", causal=True)],
        "heldout": [_attn_case(1, 3, 129, 64, "float16", causal=True),
                    _attn_case(1, 4, 150, 128, "float16", causal=False),
                    _attn_case(1, 4, 200, 64, "bfloat16", causal=False)],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16", causal=True),
                  _attn_case(8, 16, 4096, 128, "float16", causal=False)],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=_gqa_flops,
    bytes=lambda c: (2 * c["h"] + 2) * c["b"] * c["s"] * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "outliers"),
    vendor=lambda q, k, v, causal=False: F.scaled_dot_product_attention(
        q, k[:, None], v[:, None], is_causal=causal, enable_gqa=True),
    vendor_name="SDPA with one kv head and enable_gqa=True",
))


def _mask_inputs(case, s):
    b, n, dt = case["b"], case["s"], case["dtype"]
    bias = s.normal((b, 1, n, n), "float32")
    drop = s.uniform((b, 1, n, n)) < 0.25
    drop[..., 0] = False  # key 0 always visible: no fully masked row
    return {**_qkv(case, s), "mask": bias.masked_fill(drop, float("-inf")).to(getattr(torch, dt))}


register(Task(
    id="fusion/attention-mask",
    entrypoint="attention_mask",
    signature=(
        "def attention_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description="""
Attention with an additive mask, as F.scaled_dot_product_attention(q, k, v, attn_mask=mask): q, k and v
are contiguous (B, H, S, D) tensors; mask is a contiguous (B, 1, S, S) tensor of the same dtype (float16 or
bfloat16), broadcast over heads, holding finite biases and -inf for masked (query, key) pairs (every query
keeps at least one key). out[b, h, i] = sum_j softmax_j(q[b, h, i] . k[b, h, j] / sqrt(D) + mask[b, 0, i, j])
v[b, h, j]. Stream mask tiles with the keys; a block whose scores are all -inf so far must not produce NaN.
""" + _ATTN_COMMON,
    reference=lambda q, k, v, mask: _eager_attention(q, k, v, bias=mask),
    make_inputs=_mask_inputs,
    shapes={
        "dev": [_attn_case(1, 2, 64, 32, "float16"), _attn_case(2, 1, 100, 64, "float16"),
                _attn_case(1, 2, 77, 32, "bfloat16")],
        "heldout": [_attn_case(1, 3, 129, 64, "float16"), _attn_case(1, 2, 150, 128, "float16"),
                    _attn_case(1, 2, 200, 64, "bfloat16")],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16"), _attn_case(8, 16, 2048, 128, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: (4 * c["d"] + 1) * c["b"] * c["h"] * c["s"] * c["s"],
    bytes=lambda c: _attn_bytes(c) + c["b"] * c["s"] * c["s"] * elem_size(c["dtype"]),
    distributions=("normal", "outliers"),
    vendor=lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
    vendor_name="SDPA with a float attn_mask (efficient / cuDNN)",
))


def _cross_case(b: int, h: int, sq: int, sk: int, d: int, dtype: str) -> dict:
    return {"b": b, "h": h, "sq": sq, "sk": sk, "d": d, "dtype": dtype}


def _cross_inputs(case, s):
    b, h, d, dt = case["b"], case["h"], case["d"], case["dtype"]
    return {"q": s.tensor((b, h, case["sq"], d), dt), "k": s.tensor((b, h, case["sk"], d), dt),
            "v": s.without_outliers((b, h, case["sk"], d), dt)}


register(Task(
    id="fusion/cross-attention",
    entrypoint="cross_attention",
    signature="def cross_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor",
    description="""
Cross-attention (encoder-decoder models, text conditioning in diffusion UNets): queries come from one
sequence and keys/values from another of a different length. q is a contiguous (B, H, Sq, D) tensor, k and
v are contiguous (B, H, Sk, D); no mask; scale 1/sqrt(D), as F.scaled_dot_product_attention(q, k, v).
All float16 or bfloat16; D is 32, 64 or 128; Sk can be short (77 text tokens) or longer than Sq.
Return a new contiguous (B, H, Sq, D) tensor of q's dtype; accumulate in float32.
""",
    performance_note=_flash_note(
        "0.79x of cuDNN (1.145 ms with 2048 keys, 0.109 ms with 77"
        " keys)"),
    reference=lambda q, k, v: _eager_attention(q, k, v),
    make_inputs=_cross_inputs,
    shapes={
        "dev": [_cross_case(1, 2, 64, 40, 32, "float16"), _cross_case(1, 2, 33, 100, 64, "float16"),
                _cross_case(2, 1, 77, 20, 32, "bfloat16")],
        "heldout": [_cross_case(1, 3, 129, 77, 64, "float16"), _cross_case(1, 2, 1, 300, 128, "float16"),
                    _cross_case(1, 2, 150, 64, 64, "bfloat16")],
        "bench": [_cross_case(4, 32, 4096, 2048, 128, "bfloat16"),
                  _cross_case(16, 10, 4096, 77, 64, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: 4 * c["b"] * c["h"] * c["sq"] * c["sk"] * c["d"],
    bytes=lambda c: 2 * (c["sq"] + c["sk"]) * c["b"] * c["h"] * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "outliers"),
    vendor=lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    vendor_name="SDPA (flash / cuDNN)",
))


def _valid_lengths(b: int, s: int) -> list[int]:
    """Deterministic per-sample lengths from S down to about S/2 (so FLOP counts are exact)."""
    return [max(1, s - (i * (s // 2)) // max(b - 1, 1)) for i in range(b)]


def _key_padding_reference(q, k, v, lengths):
    keep = torch.arange(k.shape[-2], device=q.device)[None, :] < lengths[:, None]
    return _eager_attention(q, k, v, keep=keep[:, None, None, :])


def _key_padding_vendor(q, k, v, lengths):
    keep = torch.arange(k.shape[-2], device=q.device)[None, :] < lengths[:, None]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])


register(Task(
    id="fusion/attention-key-padding",
    entrypoint="attention_key_padding",
    signature=(
        "def attention_key_padding(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description="""
Bidirectional attention over a padded batch (BERT-style encoders): sample b has lengths[b] real tokens
followed by padding, and keys j >= lengths[b] are ignored for every query (queries in the padding are still
computed, over the real keys). q, k and v are contiguous (B, H, S, D) tensors of one dtype, float16 or
bfloat16; lengths is an int64 (B,) tensor with 1 <= lengths[b] <= S. Scale 1/sqrt(D); no causal mask.
Stop each program's key loop at lengths[b] instead of masking the padding.
""" + _ATTN_COMMON,
    reference=_key_padding_reference,
    make_inputs=lambda case, s: {**_qkv(case, s), "lengths": torch.tensor(
        _valid_lengths(case["b"], case["s"]), dtype=torch.int64, device=s.device)},
    shapes={
        "dev": [_attn_case(2, 2, 64, 32, "float16"), _attn_case(3, 1, 100, 64, "float16"),
                _attn_case(2, 1, 77, 32, "bfloat16")],
        "heldout": [_attn_case(3, 1, 129, 64, "float16"), _attn_case(2, 2, 150, 128, "float16"),
                    _attn_case(4, 2, 200, 64, "bfloat16")],
        "bench": [_attn_case(8, 16, 4096, 128, "bfloat16"), _attn_case(16, 16, 2048, 64, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: 4 * c["h"] * c["s"] * c["d"] * sum(_valid_lengths(c["b"], c["s"])),
    bytes=lambda c: (2 * c["b"] * c["s"] + 2 * sum(_valid_lengths(c["b"], c["s"]))) * c["h"] * c["d"]
    * elem_size(c["dtype"]) + 8 * c["b"],
    distributions=("normal", "outliers"),
    vendor=_key_padding_vendor,
    vendor_name="SDPA with a boolean key-padding mask",
))


def _softcap_reference(q, k, v, softcap: float):
    s = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    scores = torch.tanh(scores / softcap) * softcap
    scores = scores.masked_fill(~_causal_keep(s, s, q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


register(Task(
    id="fusion/attention-softcap",
    entrypoint="attention_softcap",
    signature=(
        "def attention_softcap(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softcap: float) "
        "-> torch.Tensor"
    ),
    description="""
Causal attention with logit soft-capping (Gemma 2, Grok): every scaled score is squashed into
(-softcap, softcap) before the mask and softmax, s = softcap * tanh((q[i] . k[j] / sqrt(D)) / softcap), then
out[b, h, i] = sum_{j <= i} softmax_j(s) v[b, h, j]. q, k and v are contiguous (B, H, S, D) tensors of one
dtype, float16 or bfloat16; softcap is a positive float (5 to 50). Scores here are large (std ~4), so the
cap changes the result.
""" + _ATTN_COMMON,
    reference=_softcap_reference,
    make_inputs=lambda case, s: {**_qkv(case, s, scale=2.0), "softcap": case["softcap"]},
    shapes={
        "dev": [_attn_case(1, 2, 64, 32, "float16", softcap=5.0),
                _attn_case(1, 2, 100, 64, "float16", softcap=10.0),
                _attn_case(2, 1, 77, 32, "bfloat16", softcap=5.0)],
        "heldout": [_attn_case(1, 3, 129, 64, "float16", softcap=8.0),
                    _attn_case(1, 2, 150, 128, "float16", softcap=50.0),
                    _attn_case(1, 2, 200, 64, "bfloat16", softcap=20.0)],
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16", softcap=50.0),
                  _attn_case(4, 16, 4096, 256, "float16", softcap=50.0)],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: (4 * c["d"] + 3) * c["b"] * c["h"] * _causal_pairs(c["s"]),
    bytes=_attn_bytes,
    distributions=("normal", "outliers"),
))


def _decode_case(b: int, h: int, hkv: int, s: int, d: int, dtype: str) -> dict:
    return {"b": b, "h": h, "hkv": hkv, "s": s, "d": d, "dtype": dtype}


def _decode_inputs(case, s):
    b, h, hkv, n, d, dt = case["b"], case["h"], case["hkv"], case["s"], case["d"], case["dtype"]
    return {"q": s.tensor((b, h, d), dt), "k_cache": s.tensor((b, hkv, n, d), dt),
            "v_cache": s.without_outliers((b, hkv, n, d), dt),
            "cache_lens": torch.tensor(_valid_lengths(b, n), dtype=torch.int32, device=s.device)}


def _decode_reference(q, k_cache, v_cache, cache_lens):
    """The query heads grouped under their kv head, against the cache as it is: a cache expanded to every
    query head took the group size times its float64 size (34 GB at the larger bench case)."""
    b, h, d = q.shape
    hkv = k_cache.shape[1]
    keep = torch.arange(k_cache.shape[2], device=q.device)[None, :] < cache_lens[:, None]
    grouped = q.reshape(b, hkv, h // hkv, d)
    return _eager_attention(grouped, k_cache, v_cache, keep=keep[:, None, None, :]).reshape(b, h, d)


def _decode_vendor(q, k_cache, v_cache, cache_lens):
    keep = torch.arange(k_cache.shape[2], device=q.device)[None, :] < cache_lens[:, None]
    return F.scaled_dot_product_attention(q[:, :, None, :], k_cache, v_cache,
                                          attn_mask=keep[:, None, None, :], enable_gqa=True)[:, :, 0, :]


register(Task(
    id="fusion/decode-attention",
    entrypoint="decode_attention",
    signature=(
        "def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, "
        "cache_lens: torch.Tensor) -> torch.Tensor"
    ),
    description="""
One decoding step of grouped-query attention over a long, contiguous (not paged) KV cache: each sample has
a single new query token per head. q is a contiguous (B, H, D) tensor; k_cache and v_cache are contiguous
(B, Hkv, S_max, D) tensors of which only the first cache_lens[b] positions of sample b are valid
(cache_lens is an int32 (B,) tensor, 1 <= cache_lens[b] <= S_max); H is a multiple of Hkv and query head h
reads kv head h // (H / Hkv). out[b, h] = sum_{j < cache_lens[b]} softmax_j(q[b, h] . k[b, h', j] / sqrt(D))
v[b, h', j]. All float16 or bfloat16; D is 64 or 128. Return a new contiguous (B, H, D) tensor of q's
dtype; accumulate in float32. With one query per head, a program per (b, h) leaves most of the GPU idle at
small B: split the keys across programs (split-K / flash-decoding) and combine the partial softmaxes.
Memory bound: read each cache element once.
""",
    reference=_decode_reference,
    make_inputs=_decode_inputs,
    shapes={
        "dev": [_decode_case(2, 4, 2, 256, 64, "float16"), _decode_case(3, 8, 1, 100, 64, "float16"),
                _decode_case(1, 4, 4, 64, 32, "bfloat16")],
        "heldout": [_decode_case(3, 8, 2, 777, 128, "float16"), _decode_case(1, 2, 2, 33, 64, "float16"),
                    _decode_case(2, 4, 1, 300, 64, "bfloat16"),
                    # a cache of 577 keys: a kernel splitting it in the style of flash-decoding may take
                    # 3 splits (not a power of two), and 577 is no multiple of 3
                    _decode_case(1, 4, 2, 577, 64, "float16")],
        "bench": [_decode_case(16, 32, 8, 32768, 128, "bfloat16"),
                  _decode_case(4, 64, 8, 131072, 128, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: 4 * c["h"] * c["d"] * sum(_valid_lengths(c["b"], c["s"])),
    bytes=lambda c: (2 * c["hkv"] * sum(_valid_lengths(c["b"], c["s"])) + 2 * c["b"] * c["h"]) * c["d"]
    * elem_size(c["dtype"]) + 4 * c["b"],
    distributions=("normal", "outliers"),
    vendor=_decode_vendor,
    vendor_name="SDPA with a boolean length mask and enable_gqa=True",
))


def _rope_bhsd(x, cos, sin):
    """Half-split rotary on a (B, H, S, D) tensor with cos, sin of (S, D/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def _rope_attention_reference(q, k, v, cos, sin):
    s = q.shape[-2]
    keep = _causal_keep(s, s, q.device)
    return _eager_attention(_rope_bhsd(q, cos, sin), _rope_bhsd(k, cos, sin), v, keep=keep)


def _rope_attention_inputs(case, s):
    cos, sin = _rope_tables(case["s"], case["d"])
    inputs = _qkv(case, s, scale=case.get("qk_scale", 1.0))
    if "qk_scale" in case:
        # Scores reach 100-170, past exp's range in fp16 (11) and fp32 (88): a kernel that skips the max
        # subtraction returns inf/NaN. Softmaxes that peaked turn the allowed fp16 rounding of rotated q
        # and k (2^-11 of a score of 150: 0.07) into weight errors of several %, so v is 1 + N(0, 0.1^2):
        # the output moves by a tenth of that, within the fp16 tolerance (max error measured: 0.2 of it).
        inputs["v"] = (1.0 + 0.1 * inputs["v"].float()).to(inputs["v"].dtype)
    return {**inputs, "cos": cos.to(s.device), "sin": sin.to(s.device)}


register(Task(
    id="fusion/rope-attention",
    entrypoint="rope_attention",
    signature=(
        "def rope_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor, "
        "sin: torch.Tensor) -> torch.Tensor"
    ),
    description="""
Rotary embedding fused into causal attention: q and k are rotated with the HALF-SPLIT convention (GPT-NeoX,
Llama): with x1 = x[..., :D/2], x2 = x[..., D/2:] and the token's position p,
rot(x) = cat(x1 * cos[p] - x2 * sin[p], x2 * cos[p] + x1 * sin[p]), then
out[b, h, i] = sum_{j <= i} softmax_j(rot(q)[b, h, i] . rot(k)[b, h, j] / sqrt(D)) v[b, h, j].
q, k and v are contiguous (B, H, S, D) tensors of one dtype, float16 or bfloat16; cos and sin are float32
(S, D/2) tables. Rotate tiles in registers as they are loaded (the rotated q and k never go to memory);
rotating in float32 and rounding to the input dtype before the dot product is fine. Scores can be large
(past 100), so subtract the running maximum.
""" + _ATTN_COMMON,
    reference=_rope_attention_reference,
    make_inputs=_rope_attention_inputs,
    shapes={
        "dev": [_attn_case(1, 2, 64, 32, "float16"), _attn_case(1, 2, 100, 64, "float16"),
                _attn_case(2, 1, 77, 32, "bfloat16")],
        "heldout": [_attn_case(1, 3, 129, 64, "float16"), _attn_case(1, 2, 150, 128, "float16"),
                    _attn_case(1, 2, 200, 64, "bfloat16"),
                    _attn_case(1, 2, 100, 64, "float16", qk_scale=6.0)],  # large scores: the max subtraction
        "bench": [_attn_case(4, 32, 4096, 128, "bfloat16"), _attn_case(8, 16, 2048, 128, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: (4 * c["b"] * c["h"] * c["d"] * _causal_pairs(c["s"])
                     + 6 * c["b"] * c["h"] * c["s"] * c["d"]),
    bytes=lambda c: _attn_bytes(c) + 4 * c["s"] * c["d"],
    # No outliers: x100 queries make the (allowed) rounding of rotated q and k to fp16 swing peaked softmaxes.
    distributions=("normal", "uniform"),
))


def _softmax_matmul_inputs(case, s):
    b, h, sq, sk, d, dt = case["b"], case["h"], case["sq"], case["sk"], case["d"], case["dtype"]
    return {"scores": s.tensor((b, h, sq, sk), dt), "v": s.without_outliers((b, h, sk, d), dt)}


register(Task(
    id="fusion/softmax-matmul",
    entrypoint="softmax_matmul",
    signature="def softmax_matmul(scores: torch.Tensor, v: torch.Tensor) -> torch.Tensor",
    description="""
Attention probabilities times values from precomputed scores: out = torch.softmax(scores, dim=-1) @ v.
scores is a contiguous (B, H, Sq, Sk) tensor and v a contiguous (B, H, Sk, D) tensor, both float16 or
bfloat16; D is 32, 64 or 128. Scores can be large (around 50), so subtract the row maximum. Stream score
tiles with an online (running max and sum) softmax and feed the probabilities straight to the P @ V
product; do not write the probabilities to memory. Accumulate in float32; return a new contiguous
(B, H, Sq, D) tensor of the input dtype.
""",
    reference=lambda scores, v: torch.softmax(scores, dim=-1) @ v,
    make_inputs=_softmax_matmul_inputs,
    shapes={
        "dev": [_cross_case(1, 2, 64, 64, 32, "float16"), _cross_case(2, 1, 50, 100, 64, "float16"),
                _cross_case(1, 2, 33, 40, 32, "bfloat16")],
        "heldout": [_cross_case(1, 3, 129, 129, 64, "float16"), _cross_case(1, 2, 7, 300, 128, "float16"),
                    _cross_case(1, 2, 100, 77, 64, "bfloat16")],
        "bench": [_cross_case(2, 32, 4096, 4096, 128, "bfloat16"),
                  _cross_case(4, 16, 2048, 4096, 64, "float16")],
    },
    dtypes=_HALF,
    tolerances=_ATTN_TOL,
    flops=lambda c: c["b"] * c["h"] * c["sq"] * c["sk"] * (2 * c["d"] + 4),
    bytes=lambda c: c["b"] * c["h"] * (c["sq"] * c["sk"] + c["sk"] * c["d"] + c["sq"] * c["d"])
    * elem_size(c["dtype"]),
    distributions=("large", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Losses over large vocabularies.

def _targets(s, m: int, v: int) -> torch.Tensor:
    """Class ids in [0, V), about 10% replaced by the ignore index -100."""
    target = s.randint(0, v, (m,))
    return target.masked_fill(s.uniform((m,)) < 0.1, -100)


def _ce_reference(logits, target):
    return F.cross_entropy(logits.to(_acc(logits)), target, reduction="none")


def _ce_case(m: int, v: int, dtype: str) -> dict:
    return {"m": m, "v": v, "dtype": dtype}


register(Task(
    id="fusion/cross-entropy",
    entrypoint="cross_entropy",
    signature="def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor",
    description="""
Per-token cross-entropy over a large vocabulary in one pass over the logits (online logsumexp):
loss[i] = logsumexp_j(logits[i, j]) - logits[i, target[i]], and loss[i] = 0 where target[i] == -100
(the ignore index), exactly F.cross_entropy(logits.float(), target, reduction="none"). logits is a
contiguous (M, V) tensor of float32, float16 or bfloat16 with V up to ~128k; target is an int64 (M,) tensor.
Compute in float32 and return a new float32 (M,) tensor. Logits can be large (around 50, up to several
hundred), so keep a running maximum; read each logit once.
""",
    reference=_ce_reference,
    make_inputs=lambda case, s: {"logits": s.tensor((case["m"], case["v"]), case["dtype"]),
                                 "target": _targets(s, case["m"], case["v"])},
    shapes={
        "dev": [_ce_case(4, 1000, "float32"), _ce_case(8, 5000, "float16"), _ce_case(4, 777, "bfloat16")],
        "heldout": [_ce_case(17, 3001, "float32"), _ce_case(3, 50257, "float16"),
                    _ce_case(5, 32000, "bfloat16"),
                    _ce_case(2, 70001, "float32")],  # past one 64K block: blocks must be combined
        "bench": [_ce_case(8192, 128256, "bfloat16"), _ce_case(16384, 32000, "float32")],
    },
    dtypes=_ALL,
    # The loss is float32 whatever the logits' dtype; the same bound is listed under each input dtype.
    tolerances={d: Tolerance(1e-4, 1e-5, 1e-5, "float32 loss: an fp32 sum of up to 128k exponentials")
                for d in _ALL},
    flops=lambda c: 4 * c["m"] * c["v"],
    bytes=lambda c: c["m"] * c["v"] * elem_size(c["dtype"]) + 12 * c["m"],
    distributions=("large", "outliers"),
))


def _linear_ce_case(m: int, k: int, v: int, dtype: str) -> dict:
    return {"m": m, "k": k, "v": v, "dtype": dtype}


register(Task(
    id="fusion/linear-cross-entropy",
    entrypoint="linear_cross_entropy",
    signature=(
        "def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) "
        "-> torch.Tensor"
    ),
    description="""
A language model's classifier head fused with its loss: logits = x @ weight.T, then per-token
cross-entropy loss[i] = logsumexp_j(logits[i, j]) - logits[i, target[i]], with loss[i] = 0 where
target[i] == -100; exactly F.cross_entropy(F.linear(x, weight).float(), target, reduction="none").
x is a contiguous (M, K) tensor of hidden states and weight the (V, K) output embedding (nn.Linear layout),
both float16 or bfloat16; target is an int64 (M,) tensor. Return a new float32 (M,) tensor. The (M, V) logits
are large (M = 8192 tokens times V = 32k-128k classes): keep them in registers, tile by tile, with an online
logsumexp, and never write them to memory. Accumulate the GEMM in float32.
""",
    reference=lambda x, weight, target: _ce_reference(F.linear(x, weight), target),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["k"]), case["dtype"]),
                                 "weight": _weight(s, case["v"], case["k"], case["dtype"]),
                                 "target": _targets(s, case["m"], case["v"])},
    shapes={
        "dev": [_linear_ce_case(16, 64, 500, "float16"), _linear_ce_case(33, 48, 300, "float16"),
                _linear_ce_case(8, 32, 100, "bfloat16")],
        "heldout": [_linear_ce_case(70, 80, 1000, "float16"), _linear_ce_case(1, 64, 777, "float16"),
                    _linear_ce_case(20, 96, 513, "bfloat16"),
                    _linear_ce_case(2, 16, 70001, "float16")],  # past one 64K block of classes
        "bench": [_linear_ce_case(8192, 4096, 32768, "bfloat16"),
                  _linear_ce_case(4096, 4096, 128256, "float16")],
    },
    dtypes=_HALF,
    tolerances={d: Tolerance(1e-4, 1e-4, 1e-5, "float32 loss: fp32 GEMM accumulation and logsumexp")
                for d in ("float32", *_HALF)},
    flops=lambda c: 2 * c["m"] * c["k"] * c["v"] + 4 * c["m"] * c["v"],
    bytes=lambda c: (c["m"] * c["k"] + c["v"] * c["k"]) * elem_size(c["dtype"]) + 12 * c["m"],
    distributions=("normal", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Mixture-of-experts routing.

def _moe_reference(logits, top_k: int, renormalize: bool):
    probs = torch.softmax(logits.to(_acc(logits)), dim=-1)
    index = torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = probs.gather(-1, index)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, index


def _moe_inputs(case, s):
    logits = s.tensor((case["t"], case["e"]), "float32")
    if case["ties"]:
        logits = torch.round(logits * 2) / 2  # many exact ties: the tie rule decides
    return {"logits": logits.to(getattr(torch, case["dtype"])), "top_k": case["k"],
            "renormalize": case["renormalize"]}


def _moe_case(t: int, e: int, k: int, renormalize: bool, dtype: str, ties: bool = False) -> dict:
    return {"t": t, "e": e, "k": k, "renormalize": renormalize, "dtype": dtype, "ties": ties}


register(Task(
    id="fusion/moe-gating",
    entrypoint="moe_gating",
    signature=(
        "def moe_gating(logits: torch.Tensor, top_k: int, renormalize: bool) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Mixture-of-experts router: softmax over the experts, then top-k selection (Switch: k = 1; Mixtral: k = 2
renormalised; DeepSeek-style: k = 8 of 256). logits is a contiguous (T, E) tensor of router scores, float32,
float16 or bfloat16. For each token, p = softmax(logits[t]) in float32; pick the top_k experts by logit,
largest first, and among equal logits the LOWER expert index first (the order of a stable descending sort);
weights[t, i] = p[index[t, i]], divided by the sum of the selected p when renormalize is True. Return
(weights, index): weights a new float32 (T, top_k) tensor, index a new int64 (T, top_k) tensor (indices must
match exactly). Inputs include many exact ties. top_k <= E <= 256.
""",
    reference=_moe_reference,
    make_inputs=_moe_inputs,
    shapes={
        "dev": [_moe_case(64, 8, 2, True, "float32"), _moe_case(33, 64, 1, False, "float16", ties=True),
                _moe_case(16, 16, 2, True, "bfloat16")],
        "heldout": [_moe_case(100, 256, 8, True, "float32", ties=True),
                    _moe_case(77, 60, 4, False, "float16"),
                    _moe_case(20, 128, 2, True, "bfloat16", ties=True)],
        "bench": [_moe_case(65536, 256, 8, True, "float32"), _moe_case(131072, 64, 2, True, "bfloat16")],
    },
    dtypes=_ALL,
    tolerances={
        # The weights are float32 whatever the logits' dtype; listed under each input dtype for the statement.
        **{d: Tolerance(1e-6, 1e-5, 1e-5, "float32 weights: a softmax and a division in fp32") for d in _ALL},
        "int64": Tolerance(0.0, 0.0, 0.0, "expert indices are exact (the tie rule is part of the task)"),
    },
    flops=lambda c: c["t"] * c["e"] * (4 + 2 * c["k"]),
    bytes=lambda c: c["t"] * c["e"] * elem_size(c["dtype"]) + 12 * c["t"] * c["k"],
    distributions=("normal", "outliers"),
))


# ---------------------------------------------------------------------------------------------------------
# Mamba's selective scan (sequential over time), with its gate.

def _scan_reference(u, delta, A, B, C, D, z, delta_bias):
    f = _acc(u)
    dt = F.softplus(delta.to(f) + delta_bias[:, None].to(f))                   # (Bt, Dm, L)
    d_a = torch.exp(dt[..., None] * A[:, None, :].to(f))                        # (Bt, Dm, L, N)
    d_bu = (dt * u.to(f))[..., None] * B.to(f).transpose(1, 2)[:, None]        # (Bt, Dm, L, N)
    h = torch.zeros(u.shape[0], u.shape[1], A.shape[1], dtype=f, device=u.device)
    ys = []
    for t in range(u.shape[2]):
        h = d_a[:, :, t] * h + d_bu[:, :, t]
        ys.append((h * C.to(f)[:, None, :, t]).sum(dim=-1))
    y = torch.stack(ys, dim=-1) + D[:, None].to(f) * u.to(f)
    return (y * F.silu(z.to(f))).to(u.dtype)


def _scan_case(b: int, d: int, length: int, n: int, dtype: str) -> dict:
    return {"b": b, "d": d, "l": length, "n": n, "dtype": dtype}


def _scan_inputs(case, s):
    b, d, length, n, dt = case["b"], case["d"], case["l"], case["n"], case["dtype"]
    a = -torch.arange(1, n + 1, dtype=torch.float32, device=s.device)[None, :] * s.uniform((d, n), 0.5, 1.5)
    dt0 = s.uniform((d,), 0.001, 0.1)
    return {
        "u": s.tensor((b, d, length), dt), "delta": s.tensor((b, d, length), dt, scale=0.5), "A": a,
        "B": s.tensor((b, n, length), dt), "C": s.tensor((b, n, length), dt), "D": s.normal((d,), "float32"),
        "z": s.tensor((b, d, length), dt), "delta_bias": torch.log(torch.expm1(dt0)),
    }


register(Task(
    id="fusion/selective-scan",
    entrypoint="selective_scan",
    signature=(
        "def selective_scan(u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, "
        "C: torch.Tensor, D: torch.Tensor, z: torch.Tensor, delta_bias: torch.Tensor) -> torch.Tensor"
    ),
    description="""
Mamba's selective state-space scan with its output gate (selective_scan_fn with delta_softplus=True and z).
u, delta and z are contiguous (Bt, Dm, L) tensors; B and C are contiguous (Bt, N, L) (input-dependent, shared
by all channels); all five share one dtype, float32, float16 or bfloat16. A is a float32 (Dm, N) matrix
(negative entries), D and delta_bias are float32 (Dm,). For every batch b and channel d, with a state
h[N] = 0 at the start and t = 0 .. L-1 in order:
    dt = softplus(delta[b, d, t] + delta_bias[d])           (softplus(x) = log(1 + exp(x)))
    h[n] = exp(dt * A[d, n]) * h[n] + dt * B[b, n, t] * u[b, d, t]
    y = sum_n C[b, n, t] * h[n] + D[d] * u[b, d, t]
    out[b, d, t] = y * silu(z[b, d, t])
Compute in float32 and return a new contiguous (Bt, Dm, L) tensor of u's dtype. The recurrence is
sequential in t: keep the state of a block of channels in registers and walk time inside one program.
N is at most 16.
""",
    reference=_scan_reference,
    make_inputs=_scan_inputs,
    shapes={
        "dev": [_scan_case(1, 16, 32, 8, "float32"), _scan_case(2, 24, 24, 16, "float16"),
                _scan_case(1, 8, 16, 4, "bfloat16")],
        "heldout": [_scan_case(2, 20, 45, 16, "float32"), _scan_case(1, 40, 33, 12, "float16"),
                    _scan_case(2, 16, 20, 16, "bfloat16")],
        "bench": [_scan_case(8, 4096, 2048, 16, "bfloat16"), _scan_case(4, 2048, 4096, 16, "float32")],
    },
    dtypes=_ALL,
    tolerances={
        "float32": Tolerance(1e-5, 1e-4, 2e-5, "an fp32 recurrence over L steps: errors grow ~ sqrt(L) ulps"),
        "float16": Tolerance(2e-3, 1e-2, 2e-3, "one fp16 rounding of the output (5e-4 relative)"),
        "bfloat16": Tolerance(1.6e-2, 2e-2, 1e-2, "one bf16 rounding of the output (4e-3 relative)"),
    },
    flops=lambda c: c["b"] * c["d"] * c["l"] * (7 * c["n"] + 12),
    bytes=lambda c: ((4 * c["d"] + 2 * c["n"]) * c["b"] * c["l"] * elem_size(c["dtype"])
                     + 4 * (c["d"] * c["n"] + 2 * c["d"])),
    distributions=("normal", "uniform"),
    # torch.compile unrolls the reference's loop over L (4096 steps at a bench shape): on the H200's host
    # it was still tracing after 200 s, holding up every evaluation waiting for that GPU. Eager only.
    baselines=("eager",),
))


# ---------------------------------------------------------------------------------------------------------
# Depthwise then pointwise 1-D convolution (a separable conv block).

def _dwpw_case(b: int, c: int, cout: int, length: int, kw: int, dtype: str) -> dict:
    return {"b": b, "c": c, "cout": cout, "l": length, "kw": kw, "dtype": dtype}


def _dwpw_inputs(case, s):
    c, cout, kw, dt = case["c"], case["cout"], case["kw"], case["dtype"]
    return {"x": s.tensor((case["b"], c, case["l"]), dt),
            "dw_weight": s.normal((c, 1, kw), dt, std=kw ** -0.5), "dw_bias": s.normal((c,), dt, std=0.5),
            "pw_weight": s.normal((cout, c, 1), dt, std=c ** -0.5), "pw_bias": s.normal((cout,), dt, std=0.5)}


register(Task(
    id="fusion/depthwise-pointwise-conv1d",
    entrypoint="depthwise_pointwise_conv1d",
    signature=(
        "def depthwise_pointwise_conv1d(x: torch.Tensor, dw_weight: torch.Tensor, dw_bias: torch.Tensor, "
        "pw_weight: torch.Tensor, pw_bias: torch.Tensor) -> torch.Tensor"
    ),
    description="""
A depthwise-separable 1-D convolution (Conformer, QuartzNet, MobileNet-style blocks): a depthwise
convolution with "same" padding followed by a pointwise (1x1) convolution, as
F.conv1d(F.conv1d(x, dw_weight, dw_bias, padding=Kw // 2, groups=C), pw_weight, pw_bias).
x is a contiguous (B, C, L) tensor, dw_weight (C, 1, Kw) with Kw odd (3 to 7), dw_bias (C,), pw_weight
(Cout, C, 1), pw_bias (Cout,); all float16 or bfloat16. Positions outside [0, L) are zero. The pointwise
stage is a GEMM over channels: compute the depthwise output tile in registers (float32, rounded to the input
dtype is fine) and feed it straight to tl.dot, so it never goes to memory. Return a new contiguous
(B, Cout, L) tensor of the input dtype.
""",
    reference=lambda x, dw_weight, dw_bias, pw_weight, pw_bias: F.conv1d(
        F.conv1d(x, dw_weight, dw_bias, padding=dw_weight.shape[-1] // 2, groups=x.shape[1]),
        pw_weight, pw_bias),
    make_inputs=_dwpw_inputs,
    shapes={
        "dev": [_dwpw_case(2, 16, 32, 40, 3, "float16"), _dwpw_case(1, 24, 40, 33, 5, "float16"),
                _dwpw_case(1, 8, 16, 20, 3, "bfloat16")],
        "heldout": [_dwpw_case(2, 48, 20, 77, 7, "float16"), _dwpw_case(1, 17, 65, 100, 3, "float16"),
                    _dwpw_case(1, 32, 32, 50, 5, "bfloat16")],
        "bench": [_dwpw_case(16, 1024, 1024, 4096, 7, "bfloat16"),
                  _dwpw_case(8, 2048, 2048, 2048, 3, "float16")],
    },
    dtypes=_HALF,
    tolerances=_TWO_GEMM_TOL,
    flops=lambda c: c["b"] * c["l"] * (c["c"] * (2 * c["kw"] + 1) + 2 * c["c"] * c["cout"] + c["cout"]),
    bytes=lambda c: (c["b"] * c["l"] * (c["c"] + c["cout"]) + c["c"] * (c["kw"] + 1)
                     + c["cout"] * (c["c"] + 1))
    * elem_size(c["dtype"]),
    # No outliers: x100 inputs make the (allowed) fp16 rounding of the depthwise output dominate.
    distributions=("normal", "uniform"),
))
