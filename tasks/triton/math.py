"""Elementwise and pointwise math."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import torch

from ..registry import register
from ..spec import ONE_BF16_ROUNDING, ONE_FP16_ROUNDING, Task, Tolerance, elem_size

register(Task(
    id="math/add",
    entrypoint="add",
    signature="def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    description="""
Elementwise sum of two contiguous 1-D float32 tensors of the same length n: out[i] = x[i] + y[i].
Return a new tensor of shape (n,) and dtype float32; do not modify x or y. n is any positive
integer, often not a multiple of the block size.
""",
    reference=lambda x, y: x + y,
    make_inputs=lambda case, s: {"x": s.tensor((case["n"],)), "y": s.tensor((case["n"],))},
    shapes={
        "dev": [{"n": 1000}, {"n": 4097}, {"n": 98309}],
        "heldout": [{"n": 1}, {"n": 12345}, {"n": 1_000_003}],
        "bench": [{"n": 1 << 28}],
    },
    dtypes=("float32",),
    flops=lambda c: c["n"],
    bytes=lambda c: 3 * 4 * c["n"],
    distributions=("normal", "uniform", "large"),
))



# ---------------------------------------------------------------------------------- pointwise on (M, N)
# One FLOP per +, -, *, /, comparison/select and per exp, log or sqrt (the convention of
# activation.py). Bytes: each input read once, the output written once.

FP16, BF16 = ONE_FP16_ROUNDING, ONE_BF16_ROUNDING
FP32_ROUNDED = Tolerance(1e-6, 1e-5, 1e-5, "a few fp32 roundings on O(1)-O(10) operands; where the result "
                         "cancels, the error stays below 1e-6 absolute")
FP32_EXACT = Tolerance(0.0, 1e-6, 1e-6, "at most one fp32 rounding of the result")
FP32_TRANSCENDENTAL = Tolerance(1e-6, 1e-5, 1e-5, "GPU exp/log/sqrt are approximate: a few ulps, and exp's "
                                "argument reduction costs |x| * 6e-8 relative")


def _wrap(text: str) -> str:
    """One paragraph re-flowed to 100 columns: the helpers below assemble descriptions from pieces."""
    return textwrap.fill(" ".join(text.split()), 100)


def _case(m: int, n: int, dtype: str, **params: Any) -> dict[str, Any]:
    return {"m": m, "n": n, "dtype": dtype, **params}


def _shapes(held: dict[str, Any] | None = None, **params: Any) -> dict[str, list[dict[str, Any]]]:
    """Small dev tensors, odd held-out ones (other parameter values), bench of 2^28-2^29 elements."""
    hp = {**params, **(held or {})}
    return {
        "dev": [_case(8, 100, "float32", **params), _case(33, 257, "float16", **params),
                _case(16, 512, "bfloat16", **params)],
        "heldout": [_case(1, 7, "float32", **hp), _case(127, 1537, "float32", **hp),
                    _case(7, 3001, "float16", **hp), _case(65, 2049, "bfloat16", **hp)],
        "bench": [_case(16384, 16384, "float32", **params), _case(32768, 16384, "bfloat16", **params),
                  _case(32768, 16384, "float16", **params)],
    }


def pointwise(
    name: str, entry: str, signature: str, description: str, reference: Callable[..., torch.Tensor],
    make_inputs: Callable[[Any, Any], dict[str, Any]], *, flops: int, tensors: int, fp32: Tolerance,
    distributions: tuple[str, ...] = ("normal", "uniform", "outliers"),
    extra_bytes: Callable[[Any], int] = lambda c: 0,
    params: dict[str, Any] | None = None, held: dict[str, Any] | None = None, past_int32: bool = False,
) -> Task:
    """An elementwise op over (M, N) tensors; ``tensors`` counts inputs and output of full size,
    ``extra_bytes`` the bytes of the smaller inputs. ``past_int32`` adds a bench case of 2^31 + 2^16
    float16 elements, whose flat offsets overflow int32 (4 GiB a tensor: for ops of one input)."""
    shapes = _shapes(held, **(params or {}))
    if past_int32:
        shapes["bench"].append(_case(65536, 32769, "float16", **(params or {})))
    return register(Task(
        id=f"math/{name}",
        entrypoint=entry,
        signature=signature,
        description=_wrap(description),
        reference=reference,
        make_inputs=make_inputs,
        shapes=shapes,
        dtypes=("float32", "float16", "bfloat16"),
        flops=lambda c: flops * c["m"] * c["n"],
        bytes=lambda c: tensors * c["m"] * c["n"] * elem_size(c["dtype"]) + extra_bytes(c),
        tolerances={"float32": fp32, "float16": FP16, "bfloat16": BF16},
        distributions=distributions,
    ))


def _mn(case: Any) -> tuple[int, int]:
    return case["m"], case["n"]


_COMMON = """x{more} {are} contiguous (M, N) tensors of one dtype, float32, float16 or bfloat16; return a new
(M, N) tensor of that dtype and leave the inputs unchanged. Compute in float32 for half-precision
inputs (one rounding at the end)."""


def _common(*more: str) -> str:
    names = "".join(f", {m}" for m in more[:-1]) + (f" and {more[-1]}" if more else "")
    return _COMMON.format(more=names, are="are" if more else "is")


pointwise(
    "mul", "mul", "def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    f"Elementwise product out = x * y.\n{_common('y')}",
    lambda x, y: x * y,
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"])},
    flops=1, tensors=3, fp32=FP32_EXACT,
)
pointwise(
    "addcmul", "addcmul",
    "def addcmul(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, value: float = 1.0) -> torch.Tensor",
    "torch.addcmul(x, y, z, value=value): out = x + value * y * z; value is a Python float.\n"
    + _common("y", "z"),
    lambda x, y, z, value=1.0: torch.addcmul(x, y, z, value=value),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"]),
                  "z": s.tensor(_mn(c), c["dtype"]), "value": c["value"]},
    flops=3, tensors=4, fp32=FP32_ROUNDED, distributions=("normal", "uniform"),
    params={"value": 0.5}, held={"value": -1.25},
)
pointwise(
    "axpy", "axpy", "def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor",
    f"Scaled add (BLAS axpy without the in-place update): out = alpha * x + y; alpha is a Python "
    f"float.\n{_common('y')}",
    lambda x, y, alpha: alpha * x + y,
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"]), "alpha": c["alpha"]},
    flops=2, tensors=3, fp32=FP32_ROUNDED, distributions=("normal", "uniform", "large"),
    params={"alpha": 0.75}, held={"alpha": 2.5},
)
pointwise(
    "exp", "exp", "def exp(x: torch.Tensor) -> torch.Tensor",
    f"Elementwise exponential out = exp(x); |x| stays below 10, so nothing overflows float16.\n{_common()}",
    lambda x: torch.exp(x),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"], scale=2.0)},
    flops=1, tensors=2, fp32=FP32_TRANSCENDENTAL, distributions=("normal", "uniform", "small"),
    past_int32=True,
)


def _positive(c: Any, s: Any, scale: float = 2.0) -> torch.Tensor:
    """Log-normal values exp(scale * z): positive, spanning several orders of magnitude."""
    return s.tensor(_mn(c), "float32", scale=scale).exp().to(getattr(torch, c["dtype"]))


pointwise(
    "log", "log", "def log(x: torch.Tensor) -> torch.Tensor",
    f"Natural logarithm out = log(x) of positive x (from about 1e-4 to 1e4).\n{_common()}",
    lambda x: torch.log(x),
    lambda c, s: {"x": _positive(c, s)},
    flops=1, tensors=2, fp32=FP32_TRANSCENDENTAL, distributions=("normal", "uniform"),
)
pointwise(
    "rsqrt", "rsqrt", "def rsqrt(x: torch.Tensor) -> torch.Tensor",
    f"Reciprocal square root out = 1 / sqrt(x) of positive x (from about 1e-4 to 1e4).\n{_common()}",
    lambda x: torch.rsqrt(x),
    lambda c, s: {"x": _positive(c, s)},
    flops=2, tensors=2, fp32=FP32_TRANSCENDENTAL, distributions=("normal", "uniform"),
)
pointwise(
    "pow", "pow", "def pow(x: torch.Tensor, exponent: float) -> torch.Tensor",
    f"Power with a scalar exponent, torch.pow(x, exponent), of positive x (about 0.01 to 100); "
    f"exponent is a Python float, not always an integer or positive.\n{_common()}",
    lambda x, exponent: torch.pow(x, exponent),
    lambda c, s: {"x": _positive(c, s, 1.0), "exponent": c["exponent"]},
    flops=3, tensors=2, fp32=FP32_TRANSCENDENTAL, distributions=("normal", "uniform"),
    params={"exponent": 1.5}, held={"exponent": -0.75},
)
pointwise(
    "clamp", "clamp", "def clamp(x: torch.Tensor, min: float, max: float) -> torch.Tensor",
    f"torch.clamp(x, min, max): out = min(max(x, min), max) with Python floats min < max.\n{_common()}",
    lambda x, min, max: torch.clamp(x, min, max),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "min": c["lo"], "max": c["hi"]},
    flops=2, tensors=2, fp32=FP32_EXACT, params={"lo": -0.5, "hi": 1.0}, held={"lo": -2.0, "hi": 0.25},
)
pointwise(
    "where", "where", "def where(cond: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    "Select, torch.where(cond, x, y): out = x where cond is True, else y. cond is a contiguous (M, N) "
    "torch.bool tensor.\n" + _common("y"),
    lambda cond, x, y: torch.where(cond, x, y),
    lambda c, s: {"cond": s.randint(0, 2, _mn(c), torch.bool), "x": s.tensor(_mn(c), c["dtype"]),
                  "y": s.tensor(_mn(c), c["dtype"])},
    flops=1, tensors=3, fp32=FP32_EXACT, extra_bytes=lambda c: c["m"] * c["n"],
)
pointwise(
    "abs-diff", "abs_diff", "def abs_diff(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    f"Absolute difference out = |x - y|.\n{_common('y')}",
    lambda x, y: (x - y).abs(),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"])},
    flops=2, tensors=3, fp32=FP32_EXACT,
)
def _away_from_zero(z: torch.Tensor) -> torch.Tensor:
    return z + torch.where(z < 0, -0.25, 0.25)


pointwise(
    "reciprocal", "reciprocal", "def reciprocal(x: torch.Tensor) -> torch.Tensor",
    f"Reciprocal out = 1 / x; |x| >= 0.25 (both signs).\n{_common()}",
    lambda x: torch.reciprocal(x),
    lambda c, s: {"x": _away_from_zero(s.tensor(_mn(c), "float32")).to(getattr(torch, c["dtype"]))},
    flops=1, tensors=2, fp32=FP32_TRANSCENDENTAL,
)
pointwise(
    "lerp", "lerp", "def lerp(x: torch.Tensor, y: torch.Tensor, weight: float) -> torch.Tensor",
    f"Linear interpolation, torch.lerp(x, y, weight): out = x + weight * (y - x); weight is a Python "
    f"float.\n{_common('y')}",
    lambda x, y, weight: torch.lerp(x, y, weight),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"]),
                  "weight": c["weight"]},
    flops=3, tensors=3, fp32=FP32_ROUNDED, distributions=("normal", "uniform"),
    params={"weight": 0.3}, held={"weight": 0.85},
)
pointwise(
    "hypot", "hypot", "def hypot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor",
    f"torch.hypot(x, y): out = sqrt(x^2 + y^2).\n{_common('y')}",
    lambda x, y: torch.hypot(x, y),
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "y": s.tensor(_mn(c), c["dtype"])},
    flops=4, tensors=3, fp32=FP32_TRANSCENDENTAL,
)
pointwise(
    "add-bias", "add_bias", "def add_bias(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor",
    "Row broadcast: out[i, j] = x[i, j] + bias[j], bias a contiguous (N,) tensor of x's dtype.\n" + _common(),
    lambda x, bias: x + bias,
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "bias": s.tensor((c["n"],), c["dtype"])},
    flops=1, tensors=2, fp32=FP32_EXACT, extra_bytes=lambda c: c["n"] * elem_size(c["dtype"]),
)
pointwise(
    "scale-rows", "scale_rows", "def scale_rows(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor",
    "Column broadcast: out[i, j] = x[i, j] * scale[i, 0], scale a contiguous (M, 1) tensor of x's "
    "dtype (as x * scale in PyTorch).\n" + _common(),
    lambda x, scale: x * scale,
    lambda c, s: {"x": s.tensor(_mn(c), c["dtype"]), "scale": s.tensor((c["m"], 1), c["dtype"])},
    flops=1, tensors=2, fp32=FP32_EXACT, extra_bytes=lambda c: c["m"] * elem_size(c["dtype"]),
)
