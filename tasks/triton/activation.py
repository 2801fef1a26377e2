"""Pointwise activation functions, plain and gated.

Every task takes a contiguous 2-D tensor (rows of a hidden layer) and returns a new tensor of
the same dtype. Inputs are scaled so both sides of every kink and the saturated tails are hit
(a relu on positive inputs only would be passed by returning the input).

FLOPs are counted per output element with one FLOP for each +, -, *, /, comparison, select,
max/min, and one for each exp, log, erf or tanh: a convention, used the same way everywhere, so
achieved GFLOP/s compare across tasks. Bytes are the compulsory traffic: inputs read once,
outputs written once.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

FP32_TRANSCENDENTAL = Tolerance(1e-6, 1e-5, 1e-5, "fp32 exp/erf/log lose a few ulps (GPU exp is ex2.approx)")
FP32_PIECEWISE = Tolerance(1e-7, 2e-6, 2e-6, "piecewise-linear: at most a few fp32 roundings per element")
FP16 = Tolerance(1e-3, 1e-2, 2e-3, "computed in fp32, one rounding to fp16 (4.9e-4 relative)")
BF16 = Tolerance(8e-3, 3e-2, 1e-2, "computed in fp32, one rounding to bf16 (3.9e-3 relative)")


def _wrap(text: str) -> str:
    """One paragraph re-flowed to 100 columns: the helpers below assemble descriptions from pieces."""
    return textwrap.fill(" ".join(text.split()), 100)


def _case(m: int, n: int, dtype: str, **params: Any) -> dict[str, Any]:
    return {"m": m, "n": n, "dtype": dtype, **params}


def _shapes(held: dict[str, Any] | None = None, **params: Any) -> dict[str, list[dict[str, Any]]]:
    """Shared sizes: small dev rows, odd held-out rows (other parameter values), 1 GiB-per-tensor bench."""
    hp = {**params, **(held or {})}
    return {
        "dev": [_case(8, 100, "float32", **params), _case(33, 257, "float16", **params),
                _case(16, 512, "bfloat16", **params)],
        "heldout": [_case(1, 7, "float32", **hp), _case(127, 1537, "float32", **hp),
                    _case(7, 3001, "float16", **params), _case(65, 2049, "bfloat16", **hp)],
        "bench": [_case(16384, 16384, "float32", **params), _case(32768, 16384, "bfloat16", **params),
                  _case(32768, 16384, "float16", **params)],
    }


def unary(
    name: str, entry: str, formula: str, reference: Callable[..., torch.Tensor], flops: int, *,
    params: dict[str, float] | None = None, held: dict[str, float] | None = None, scale: float = 3.0,
    piecewise: bool = False, extra: str = "", fp32: Tolerance | None = None,
) -> Task:
    """One pointwise activation over a (M, N) tensor; ``params`` are float keyword arguments."""
    params = params or {}
    extra_sig = "".join(f", {p}: float = {default!r}" for p, default in _DEFAULTS.get(entry, {}).items())
    signature = f"def {entry}(x: torch.Tensor{extra_sig}) -> torch.Tensor"

    def make_inputs(case, s):
        inputs: dict[str, Any] = {"x": s.tensor((case["m"], case["n"]), case["dtype"], scale=scale)}
        inputs.update({p: case[p] for p in params})
        return inputs

    description = f"""
Pointwise {formula}
x is a contiguous (M, N) tensor of float32, float16 or bfloat16; return a new (M, N) tensor of
the same dtype and leave x unchanged. Compute in float32 for half-precision inputs. {extra}
Inputs span both signs and the saturated tails (|x| up to several hundred).
"""
    return register(Task(
        id=f"activation/{name}",
        entrypoint=entry,
        signature=signature,
        description=_wrap(description),
        reference=lambda x, **kw: reference(x, **kw),  # PyTorch names the argument `input`, not `x`
        make_inputs=make_inputs,
        shapes=_shapes(held, **params),
        dtypes=("float32", "float16", "bfloat16"),
        flops=lambda c: flops * c["m"] * c["n"],
        bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
        tolerances={"float32": fp32 or (FP32_PIECEWISE if piecewise else FP32_TRANSCENDENTAL),
                    "float16": FP16, "bfloat16": BF16},
        distributions=("normal", "uniform", "outliers"),
    ))


_DEFAULTS: dict[str, dict[str, float]] = {
    "leaky_relu": {"negative_slope": 0.01},
    "elu": {"alpha": 1.0},
    "softplus": {"beta": 1.0},
    "hardtanh": {"min_val": -1.0, "max_val": 1.0},
}


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


unary("relu", "relu", "ReLU: out = max(x, 0).", F.relu, 1, piecewise=True)
unary("leaky-relu", "leaky_relu",
      "leaky ReLU, as torch.nn.functional.leaky_relu(x, negative_slope): out = x if x >= 0 else "
      "negative_slope * x.",
      lambda x, negative_slope=0.01: F.leaky_relu(x, negative_slope), 2,
      params={"negative_slope": 0.2}, held={"negative_slope": 0.05}, piecewise=True,
      extra="negative_slope is a Python float (not always the default).")
unary("gelu", "gelu",
      "GELU in its exact erf form, as torch.nn.functional.gelu(x): out = 0.5 * x * (1 + erf(x / sqrt(2))).",
      F.gelu, 5, extra="The tanh approximation is NOT accurate enough for float32.",
      fp32=Tolerance(2e-6, 1e-5, 1e-5, "fp32 1 + erf(x/sqrt 2) cancels below x = -3, where out keeps "
                     "erf's absolute error times x/2: PyTorch's own fp32 GELU is 1.2e-6 off at x = -3.1"))
unary("gelu-tanh", "gelu_tanh",
      "GELU, tanh approximation, as torch.nn.functional.gelu(x, approximate='tanh'): "
      "out = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).",
      _gelu_tanh, 9)
unary("silu", "silu", "SiLU (swish): out = x * sigmoid(x) = x / (1 + exp(-x)).", F.silu, 5)
unary("sigmoid", "sigmoid", "logistic sigmoid: out = 1 / (1 + exp(-x)).", torch.sigmoid, 4,
      extra="exp(-x) overflows float32 for x < -88; the result must still be right (0, not NaN).")
unary("tanh", "tanh", "hyperbolic tangent: out = tanh(x).", torch.tanh, 1,
      extra="tanh saturates at +-1; exp(2x) overflows for large |x|, which must not give NaN.")
unary("softplus", "softplus",
      "softplus, as torch.nn.functional.softplus(x, beta): out = log(1 + exp(beta * x)) / beta "
      "(PyTorch returns x where beta * x > 20; the difference is below float32 resolution).",
      lambda x, beta=1.0: F.softplus(x, beta), 7, params={"beta": 2.0}, held={"beta": 0.5},
      extra="beta is a positive Python float. exp(beta * x) overflows for large x: use a stable form.")
unary("elu", "elu",
      "ELU, as torch.nn.functional.elu(x, alpha): out = x if x > 0 else alpha * (exp(x) - 1).",
      lambda x, alpha=1.0: F.elu(x, alpha), 4, params={"alpha": 0.7}, held={"alpha": 1.3},
      extra="alpha is a Python float.")
unary("selu", "selu",
      f"SELU, as torch.nn.functional.selu(x): out = scale * (x if x > 0 else alpha * (exp(x) - 1)) "
      f"with alpha = {SELU_ALPHA!r} and scale = {SELU_SCALE!r}.",
      F.selu, 5)
unary("hardswish", "hardswish",
      "hard swish, as torch.nn.functional.hardswish(x): out = x * min(max(x + 3, 0), 6) / 6.",
      F.hardswish, 5, scale=4.0)
unary("hardsigmoid", "hardsigmoid",
      "hard sigmoid, as torch.nn.functional.hardsigmoid(x): out = min(max(x + 3, 0), 6) / 6.",
      F.hardsigmoid, 4, scale=4.0)
unary("hardtanh", "hardtanh",
      "hard tanh, as torch.nn.functional.hardtanh(x, min_val, max_val): out = min(max(x, min_val), max_val).",
      lambda x, min_val=-1.0, max_val=1.0: F.hardtanh(x, min_val, max_val), 2,
      params={"min_val": -0.5, "max_val": 2.0}, held={"min_val": -2.0, "max_val": 0.25},
      piecewise=True,
      extra="min_val < max_val are Python floats.")
unary("mish", "mish",
      "Mish, as torch.nn.functional.mish(x): out = x * tanh(softplus(x)) with softplus(x) = log(1 + exp(x)).",
      F.mish, 7, extra="exp(x) overflows for large x: out is then x.")
unary("softsign", "softsign", "softsign: out = x / (1 + |x|).", F.softsign, 3)
unary("logsigmoid", "logsigmoid",
      "log-sigmoid, as torch.nn.functional.logsigmoid(x): out = log(1 / (1 + exp(-x))) = -softplus(-x).",
      F.logsigmoid, 6, extra="For very negative x the result is about x; a naive log(sigmoid(x)) gives -inf.")


# ---------------------------------------------------------------------------------- gated


def _swiglu_reference(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up


def _geglu_reference(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, dim=-1)
    return F.gelu(gate, approximate="tanh") * up


GEGLU_FP32 = Tolerance(
    5e-4, 1e-5, 1e-5,
    "fp32 tanh-GELU cancels in 1 + tanh(z) for gates in about [-5.5, -2]: there gelu(g) is off by up to "
    "~1.5 eps |g| <= 5e-7 absolute, times |u|, which the outliers make up to ~900 (100 x N(0,1) x 2), "
    "so 5e-4 absolute; elsewhere a few ulps (rtol). The norm-wise bound stays at fp32 level")
"""Measured: PyTorch's own fp32 F.gelu(approximate="tanh") * u errs by <= 1.5 eps (|out| + |g u|) on every
case; its largest absolute error off the rtol bound is ~1.5e-5 on the held-out outliers."""


def gated(name: str, entry: str, what: str, reference: Callable[..., torch.Tensor], flops: int,
          fp32: Tolerance = FP32_TRANSCENDENTAL) -> Task:
    def make_inputs(case, s):
        return {"x": s.tensor((case["m"], 2 * case["n"]), case["dtype"], scale=2.0)}

    return register(Task(
        id=f"activation/{name}",
        entrypoint=entry,
        signature=f"def {entry}(x: torch.Tensor) -> torch.Tensor",
        description=f"""
Gated activation of a fused gate/up projection: x is a contiguous (M, 2N) tensor whose first N
columns are the gate g and last N columns the value u; out[i, j] = {what}(g[i, j]) * u[i, j],
an (M, N) tensor of x's dtype (float32, float16 or bfloat16). Compute in float32 for half-precision
inputs; leave x unchanged.
""",
        reference=reference,
        make_inputs=make_inputs,
        shapes=_shapes(),
        dtypes=("float32", "float16", "bfloat16"),
        flops=lambda c: flops * c["m"] * c["n"],
        bytes=lambda c: 3 * c["m"] * c["n"] * elem_size(c["dtype"]),
        tolerances={"float32": fp32, "float16": FP16, "bfloat16": BF16},
        distributions=("normal", "uniform", "outliers"),
    ))


gated("swiglu", "swiglu", "silu", _swiglu_reference, 6)
gated("geglu", "geglu",
      "gelu_tanh (GELU, tanh approximation: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))))",
      _geglu_reference, 10, fp32=GEGLU_FP32)


# ---------------------------------------------------------------------------------- per-channel


def _prelu_inputs(case, s):
    return {"x": s.tensor((case["m"], case["n"]), case["dtype"], scale=3.0),
            "weight": s.uniform((case["n"],), 0.05, 0.5, case["dtype"])}


register(Task(
    id="activation/prelu",
    entrypoint="prelu",
    signature="def prelu(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor",
    description="""
PReLU with one learned slope per channel, as torch.nn.functional.prelu(x, weight): x is a contiguous
(M, C) tensor, weight a (C,) tensor of the same dtype (float32, float16 or bfloat16);
out[i, c] = x[i, c] if x[i, c] >= 0 else weight[c] * x[i, c]. Return a new (M, C) tensor of x's
dtype; leave the inputs unchanged.
""",
    reference=lambda x, weight: F.prelu(x, weight),
    make_inputs=_prelu_inputs,
    shapes=_shapes(),
    dtypes=("float32", "float16", "bfloat16"),
    flops=lambda c: 2 * c["m"] * c["n"],
    bytes=lambda c: (2 * c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    tolerances={"float32": FP32_PIECEWISE, "float16": FP16, "bfloat16": BF16},
    distributions=("normal", "uniform", "outliers"),
))
