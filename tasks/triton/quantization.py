"""Quantization: int8 and fp8 (e4m3) quantize and dequantize with per-tensor, per-channel and
per-group scales, dynamic (absmax) quantization, int4 packing, and the quantized GEMMs that use them.

Every quantizing task fixes its arithmetic so the integer (and fp8) outputs can be checked exactly:
- x is converted to float32 (exact for float16 and bfloat16) and divided by the float32 scale with
  a correctly rounded IEEE division. In Triton, `/` on float32 is approximate on NVIDIA GPUs (up to
  2 ulp, which moves values across rounding boundaries); use tl.math.div_rn(x, s).
- int8: q = clamp(round_half_even(x / s), -128, 127), the full int8 range; round half to even as
  torch.round does (2.5 -> 2, -0.5 -> -0, 3.5 -> 4). int4: the same with the range [-8, 7].
- float8_e4m3fn: q = float8_e4m3fn(clamp(x / s, -448, 448)): saturate to +-448 (the largest finite
  e4m3 value; e4m3fn has no infinity), then round to the nearest e4m3 value, ties to even (what
  torch's .to(torch.float8_e4m3fn) and the GPU's cvt.rn.satfinite do).
The references below implement exactly that in float32, whatever precision the harness hands them.

On a CPU, Triton's interpreter converts float32/float16 to fp8 wrongly (see the notes of the fp8
tasks); the reference solutions therefore encode fp8 bytes with integer arithmetic, which is exact
everywhere.
"""

from __future__ import annotations

import torch

from ..registry import register
from ..spec import Task, Tolerance, dtype_of, elem_size

QMAX = {"int8": 127.0, "float8_e4m3fn": 448.0}
EXACT = Tolerance(0.0, 0.0, 0.0, "the rounding and saturation rules are fixed: checked exactly")
QUANT_TOLERANCES = {
    "int8": EXACT,
    "float8_e4m3fn": EXACT,
    "uint8": EXACT,
    "float32": Tolerance(0.0, 1e-6, 1e-7, "scales: one correctly rounded fp32 division; exact up to an ulp"),
    "float16": Tolerance(0.0, 1e-3, 5e-4, "inputs only"),
    "bfloat16": Tolerance(0.0, 8e-3, 4e-3, "inputs only"),
}
DEQUANT_TOLERANCES = {
    "float32": Tolerance(1e-6, 1e-6, 1e-7, "one fp32 product of two exact values per element"),
    "float16": Tolerance(1e-6, 1e-3, 5e-4, "one fp16 rounding of an exact product (<= 4.9e-4 relative)"),
    "bfloat16": Tolerance(1e-6, 8e-3, 4e-3, "one bf16 rounding of an exact product (<= 3.9e-3 relative)"),
    "int8": EXACT,
    "float8_e4m3fn": EXACT,
    "uint8": EXACT,
}
FP8_NOTE = (
    "Triton's CPU interpreter (3.9) converts float32/float16 to float8e4nv wrongly: a rounding carry into "
    "the exponent is lost when the exponent is odd (31.6 -> 16, not 32), ties round away from zero, "
    "subnormal results are truncated and nothing saturates (464 -> NaN). On a CPU, encode fp8 with integer "
    "arithmetic (or check fp8 outputs on a GPU); loading fp8 and converting it up is correct."
)


def quantize_ref(y: torch.Tensor, qdtype: torch.dtype) -> torch.Tensor:
    """The task's rounding and saturation rule applied to y = x / scale (float32)."""
    if qdtype == torch.int8:
        return torch.clamp(torch.round(y), -128, 127).to(torch.int8)
    if qdtype == torch.float8_e4m3fn:
        return torch.clamp(y, -448.0, 448.0).to(torch.float8_e4m3fn)
    raise ValueError(f"qdtype must be torch.int8 or torch.float8_e4m3fn, not {qdtype}")


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


def div_by(t: torch.Tensor, divisor: float) -> torch.Tensor:
    """t / divisor, correctly rounded: on a GPU, torch divides by a Python number as a product with its
    reciprocal (one ulp off at times), so the divisor is a tensor of t's shape."""
    return t / torch.full_like(t, divisor)


def _static_scale(s, shape, qdtype: str) -> torch.Tensor:
    """Scales that map about 3.2 standard deviations to the top code: N(0, 1) tails saturate."""
    return s.uniform(shape, 0.7, 1.3) * (3.2 / QMAX[qdtype])


def _quant_case(m: int, k: int, dtype: str, qdtype: str, **extra: object) -> dict[str, object]:
    return {"m": m, "k": k, "dtype": dtype, "qdtype": qdtype, **extra}


def _quant_bytes(c) -> int:
    return c["m"] * c["k"] * (elem_size(c["dtype"]) + 1)


QUANT_RULES = """
Arithmetic (fixed, so that outputs are checked exactly): convert x to float32, divide by the float32
scale with a correctly rounded IEEE division (in Triton: tl.math.div_rn; plain `/` on float32 is
approximate on NVIDIA GPUs), then
- qdtype torch.int8: q = clamp(round_half_even(y), -128, 127) (round half to even, as torch.round);
- qdtype torch.float8_e4m3fn: q = clamp(y, -448, 448) converted to e4m3 rounding to nearest, ties
  to even (saturating at +-448, as torch's .to(torch.float8_e4m3fn) after the clamp).
"""

# ---------------------------------------------------------------------------------------------
# Static quantization: the scales are given.


def quantize_per_tensor_ref(x: torch.Tensor, scale: torch.Tensor, qdtype: torch.dtype) -> torch.Tensor:
    return quantize_ref(_f32(x) / _f32(scale), qdtype)


register(Task(
    id="quantization/quantize-per-tensor",
    entrypoint="quantize_per_tensor",
    signature=(
        "def quantize_per_tensor(x: torch.Tensor, scale: torch.Tensor, qdtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
Symmetric per-tensor quantization with a given scale: x is a contiguous (M, K) tensor of float32,
float16 or bfloat16, scale a float32 tensor of shape (1,), and qdtype torch.int8 or
torch.float8_e4m3fn; return a new contiguous (M, K) tensor of dtype qdtype with
q[i, j] = Q(x[i, j] / scale[0]).
""" + QUANT_RULES,
    reference=quantize_per_tensor_ref,
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["k"]), case["dtype"]),
        "scale": _static_scale(s, (1,), case["qdtype"]),
        "qdtype": dtype_of(case["qdtype"]),
    },
    shapes={
        "dev": [
            _quant_case(64, 100, "float32", "int8"),
            _quant_case(33, 257, "float16", "float8_e4m3fn"),
            _quant_case(40, 96, "float16", "int8"),
            _quant_case(16, 64, "bfloat16", "int8"),
        ],
        "heldout": [
            _quant_case(1, 1, "float32", "int8"),
            _quant_case(100, 300, "float16", "int8"),
            _quant_case(77, 129, "float32", "float8_e4m3fn"),
            _quant_case(20, 50, "bfloat16", "float8_e4m3fn"),
        ],
        "bench": [
            _quant_case(16384, 16384, "bfloat16", "float8_e4m3fn"),
            _quant_case(16384, 16384, "float32", "int8"),
        ],
    },
    dtypes=("int8", "float8_e4m3fn", "float32", "float16", "bfloat16"),
    tolerances=QUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _quant_bytes(c) + 4,
    distributions=("normal", "uniform", "outliers"),
    notes=FP8_NOTE,
))


def quantize_per_channel_ref(x: torch.Tensor, scale: torch.Tensor, qdtype: torch.dtype) -> torch.Tensor:
    return quantize_ref(_f32(x) / _f32(scale)[:, None], qdtype)


register(Task(
    id="quantization/quantize-per-channel",
    entrypoint="quantize_per_channel",
    signature=(
        "def quantize_per_channel(x: torch.Tensor, scale: torch.Tensor, qdtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
Symmetric per-channel (per-row) quantization with given scales, as for the output channels of a
weight: x is a contiguous (M, K) tensor of float32, float16 or bfloat16, scale a contiguous float32
(M,) tensor (one scale per row), and qdtype torch.int8 or torch.float8_e4m3fn; return a new
contiguous (M, K) tensor of dtype qdtype with q[i, j] = Q(x[i, j] / scale[i]).
""" + QUANT_RULES,
    reference=quantize_per_channel_ref,
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["k"]), case["dtype"]),
        "scale": _static_scale(s, (case["m"],), case["qdtype"]),
        "qdtype": dtype_of(case["qdtype"]),
    },
    shapes={
        "dev": [
            _quant_case(64, 100, "float32", "int8"),
            _quant_case(33, 257, "float16", "float8_e4m3fn"),
            _quant_case(40, 96, "float16", "int8"),
            _quant_case(16, 64, "bfloat16", "int8"),
        ],
        "heldout": [
            _quant_case(1, 1, "float32", "int8"),
            _quant_case(100, 300, "float16", "int8"),
            _quant_case(77, 129, "float32", "float8_e4m3fn"),
            _quant_case(20, 50, "bfloat16", "float8_e4m3fn"),
        ],
        "bench": [
            _quant_case(16384, 16384, "bfloat16", "float8_e4m3fn"),
            _quant_case(16384, 16384, "float32", "int8"),
        ],
    },
    dtypes=("int8", "float8_e4m3fn", "float32", "float16", "bfloat16"),
    tolerances=QUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _quant_bytes(c) + 4 * c["m"],
    distributions=("normal", "uniform", "outliers"),
    notes=FP8_NOTE,
))


def quantize_per_group_ref(x: torch.Tensor, scale: torch.Tensor, group_size: int,
                           qdtype: torch.dtype) -> torch.Tensor:
    m, k = x.shape
    y = _f32(x).reshape(m, k // group_size, group_size) / _f32(scale)[:, :, None]
    return quantize_ref(y, qdtype).reshape(m, k)


register(Task(
    id="quantization/quantize-per-group",
    entrypoint="quantize_per_group",
    signature=(
        "def quantize_per_group(x: torch.Tensor, scale: torch.Tensor, group_size: int, "
        "qdtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
Symmetric per-group quantization with given scales: x is a contiguous (M, K) tensor of float32,
float16 or bfloat16 whose rows are cut into groups of group_size consecutive elements (group_size is
32, 64 or 128 and divides K); scale is a contiguous float32 (M, K // group_size) tensor, one scale per
group; qdtype is torch.int8 or torch.float8_e4m3fn. Return a new contiguous (M, K) tensor of dtype
qdtype with q[i, j] = Q(x[i, j] / scale[i, j // group_size]).
""" + QUANT_RULES,
    reference=quantize_per_group_ref,
    make_inputs=lambda case, s: {
        "x": s.tensor((case["m"], case["k"]), case["dtype"]),
        "scale": _static_scale(s, (case["m"], case["k"] // case["group_size"]), case["qdtype"]),
        "group_size": case["group_size"],
        "qdtype": dtype_of(case["qdtype"]),
    },
    shapes={
        "dev": [
            _quant_case(16, 256, "float32", "int8", group_size=64),
            _quant_case(9, 384, "float16", "float8_e4m3fn", group_size=128),
            _quant_case(20, 96, "float16", "int8", group_size=32),
            _quant_case(8, 128, "bfloat16", "int8", group_size=32),
        ],
        "heldout": [
            _quant_case(1, 32, "float32", "int8", group_size=32),
            _quant_case(33, 640, "float16", "int8", group_size=128),
            _quant_case(17, 192, "float32", "float8_e4m3fn", group_size=64),
            _quant_case(5, 256, "bfloat16", "float8_e4m3fn", group_size=128),
        ],
        "bench": [
            _quant_case(16384, 16384, "bfloat16", "float8_e4m3fn", group_size=128),
            _quant_case(16384, 16384, "float16", "int8", group_size=64),
        ],
    },
    dtypes=("int8", "float8_e4m3fn", "float32", "float16", "bfloat16"),
    tolerances=QUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _quant_bytes(c) + 4 * c["m"] * (c["k"] // c["group_size"]),
    distributions=("normal", "uniform", "outliers"),
    notes=FP8_NOTE,
))


# ---------------------------------------------------------------------------------------------
# Dequantization.

def _q_values(s, shape, qdtype: str) -> torch.Tensor:
    """Codes spread over the whole int8 range, or fp8 values up to +-448 (never NaN)."""
    if qdtype == "int8":
        return s.randint(-128, 128, shape, torch.int8)
    return (s.normal(shape, torch.float32) * 100.0).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


def _dequant_case(m: int, k: int, qdtype: str, out: str, **extra: object) -> dict[str, object]:
    return {"m": m, "k": k, "qdtype": qdtype, "dtype": out, **extra}


DEQUANT_RULES = """
Compute q converted to float32 times the float32 scale in float32 and round once to out_dtype
(float32, float16 or bfloat16).
"""


def dequantize_per_tensor_ref(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return (q.to(scale.dtype) * scale).to(out_dtype)


DEQUANT_SHAPES = {
    "dev": [
        _dequant_case(64, 100, "int8", "float32"),
        _dequant_case(33, 256, "float8_e4m3fn", "float16"),
        _dequant_case(16, 64, "int8", "float16"),
    ],
    "heldout": [
        _dequant_case(1, 1, "int8", "float16"),
        _dequant_case(100, 384, "float8_e4m3fn", "float32"),
        _dequant_case(77, 129, "int8", "float32"),
    ],
    "bench": [
        _dequant_case(32768, 16384, "float8_e4m3fn", "bfloat16"),
        _dequant_case(32768, 16384, "int8", "float16"),
    ],
}


def _dequant_bytes(c) -> int:
    return c["m"] * c["k"] * (1 + elem_size(c["dtype"]))


register(Task(
    id="quantization/dequantize-per-tensor",
    entrypoint="dequantize_per_tensor",
    signature=(
        "def dequantize_per_tensor(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype) "
        "-> torch.Tensor"
    ),
    description="""
Per-tensor dequantization: q is a contiguous (M, K) tensor of int8 or float8_e4m3fn codes, scale a
float32 tensor of shape (1,) and out_dtype torch.float32, torch.float16 or torch.bfloat16; return a
new contiguous (M, K) tensor of dtype out_dtype with out[i, j] = float(q[i, j]) * scale[0].
""" + DEQUANT_RULES,
    reference=dequantize_per_tensor_ref,
    make_inputs=lambda case, s: {
        "q": _q_values(s, (case["m"], case["k"]), case["qdtype"]),
        "scale": s.uniform((1,), 0.005, 0.05),
        "out_dtype": dtype_of(case["dtype"]),
    },
    shapes=DEQUANT_SHAPES,
    dtypes=("float32", "float16", "bfloat16", "int8", "float8_e4m3fn"),
    tolerances=DEQUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _dequant_bytes(c) + 4,
    distributions=("normal",),
))


def dequantize_per_channel_ref(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return (q.to(scale.dtype) * scale[:, None]).to(out_dtype)


register(Task(
    id="quantization/dequantize-per-channel",
    entrypoint="dequantize_per_channel",
    signature=(
        "def dequantize_per_channel(q: torch.Tensor, scale: torch.Tensor, out_dtype: torch.dtype) "
        "-> torch.Tensor"
    ),
    description="""
Per-channel (per-row) dequantization: q is a contiguous (M, K) tensor of int8 or float8_e4m3fn codes,
scale a contiguous float32 (M,) tensor (one scale per row) and out_dtype torch.float32, torch.float16
or torch.bfloat16; return a new contiguous (M, K) tensor of dtype out_dtype with
out[i, j] = float(q[i, j]) * scale[i].
""" + DEQUANT_RULES,
    reference=dequantize_per_channel_ref,
    make_inputs=lambda case, s: {
        "q": _q_values(s, (case["m"], case["k"]), case["qdtype"]),
        "scale": s.uniform((case["m"],), 0.005, 0.05),
        "out_dtype": dtype_of(case["dtype"]),
    },
    shapes=DEQUANT_SHAPES,
    dtypes=("float32", "float16", "bfloat16", "int8", "float8_e4m3fn"),
    tolerances=DEQUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _dequant_bytes(c) + 4 * c["m"],
    distributions=("normal",),
))


def dequantize_per_group_ref(q: torch.Tensor, scale: torch.Tensor, group_size: int,
                             out_dtype: torch.dtype) -> torch.Tensor:
    m, k = q.shape
    w = q.to(scale.dtype).reshape(m, k // group_size, group_size) * scale[:, :, None]
    return w.reshape(m, k).to(out_dtype)


register(Task(
    id="quantization/dequantize-per-group",
    entrypoint="dequantize_per_group",
    signature=(
        "def dequantize_per_group(q: torch.Tensor, scale: torch.Tensor, group_size: int, "
        "out_dtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
Per-group dequantization: q is a contiguous (M, K) tensor of int8 or float8_e4m3fn codes whose rows are
cut into groups of group_size consecutive elements (32, 64 or 128, dividing K); scale is a contiguous
float32 (M, K // group_size) tensor and out_dtype torch.float32, torch.float16 or torch.bfloat16.
Return a new contiguous (M, K) tensor of dtype out_dtype with
out[i, j] = float(q[i, j]) * scale[i, j // group_size].
""" + DEQUANT_RULES,
    reference=dequantize_per_group_ref,
    make_inputs=lambda case, s: {
        "q": _q_values(s, (case["m"], case["k"]), case["qdtype"]),
        "scale": s.uniform((case["m"], case["k"] // case["group_size"]), 0.005, 0.05),
        "group_size": case["group_size"],
        "out_dtype": dtype_of(case["dtype"]),
    },
    shapes={
        "dev": [
            _dequant_case(16, 256, "int8", "float32", group_size=64),
            _dequant_case(9, 384, "float8_e4m3fn", "float16", group_size=128),
            _dequant_case(20, 96, "int8", "float16", group_size=32),
        ],
        "heldout": [
            _dequant_case(1, 32, "int8", "float16", group_size=32),
            _dequant_case(33, 640, "float8_e4m3fn", "float32", group_size=128),
            _dequant_case(17, 192, "int8", "float32", group_size=64),
        ],
        "bench": [
            _dequant_case(32768, 16384, "float8_e4m3fn", "bfloat16", group_size=128),
            _dequant_case(32768, 16384, "int8", "float16", group_size=64),
        ],
    },
    dtypes=("float32", "float16", "bfloat16", "int8", "float8_e4m3fn"),
    tolerances=DEQUANT_TOLERANCES,
    flops=lambda c: c["m"] * c["k"],
    bytes=lambda c: _dequant_bytes(c) + 4 * c["m"] * (c["k"] // c["group_size"]),
    distributions=("normal",),
))


# ---------------------------------------------------------------------------------------------
# Dynamic quantization: the kernel finds the scales.

DYNAMIC_RULES = """
Scales (float32): amax = max(max |x| over the row or group, 1e-12) and scale = amax / QMAX with QMAX =
127 for int8 and 448 for float8_e4m3fn, a correctly rounded float32 division (tl.math.div_rn). Then
q = Q(x / scale) with the same division and rounding rules:
- int8: q = clamp(round_half_even(x / scale), -128, 127) (round half to even, as torch.round);
- float8_e4m3fn: q = clamp(x / scale, -448, 448) converted to e4m3, round to nearest, ties to even.
Integer and fp8 outputs are checked exactly; the scales to 1e-6 relative.
"""


def _with_zero_row(x: torch.Tensor) -> torch.Tensor:
    """Row 0 all zeros when there are several rows: the 1e-12 floor must keep the scale positive."""
    if x.shape[0] > 1:
        x = x.clone()
        x[0] = 0
    return x


def quantize_dynamic_per_token_ref(x: torch.Tensor, qdtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    xf = _f32(x)
    amax = xf.abs().amax(dim=-1).clamp_min(1e-12)
    scale = div_by(amax, QMAX[str(qdtype).removeprefix("torch.")])
    return quantize_ref(xf / scale[:, None], qdtype), scale


register(Task(
    id="quantization/quantize-dynamic-per-token",
    entrypoint="quantize_dynamic_per_token",
    signature=(
        "def quantize_dynamic_per_token(x: torch.Tensor, qdtype: torch.dtype) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Dynamic per-token (per-row) symmetric quantization of activations, as run before an int8 or fp8 GEMM:
x is a contiguous (M, K) tensor of float32, float16 or bfloat16 (one token per row) and qdtype
torch.int8 or torch.float8_e4m3fn. Return (q, scale): q a new contiguous (M, K) tensor of dtype qdtype,
scale a new float32 (M,) tensor with one scale per row. Rows can be all zeros.
""" + DYNAMIC_RULES,
    reference=quantize_dynamic_per_token_ref,
    make_inputs=lambda case, s: {
        "x": _with_zero_row(s.tensor((case["m"], case["k"]), case["dtype"])),
        "qdtype": dtype_of(case["qdtype"]),
    },
    shapes={
        "dev": [
            _quant_case(16, 100, "float32", "int8"),
            _quant_case(9, 512, "float16", "float8_e4m3fn"),
            _quant_case(20, 300, "float16", "int8"),
            _quant_case(8, 64, "bfloat16", "float8_e4m3fn"),
        ],
        "heldout": [
            _quant_case(1, 1, "float32", "int8"),
            _quant_case(33, 1000, "float16", "int8"),
            _quant_case(17, 257, "float32", "float8_e4m3fn"),
            _quant_case(5, 128, "bfloat16", "int8"),
        ],
        "bench": [
            _quant_case(32768, 16384, "bfloat16", "float8_e4m3fn"),
            _quant_case(65536, 8192, "float16", "int8"),
        ],
    },
    dtypes=("int8", "float8_e4m3fn", "float32", "float16", "bfloat16"),
    tolerances=QUANT_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["k"],
    bytes=lambda c: _quant_bytes(c) + 4 * c["m"],
    distributions=("normal", "uniform", "outliers"),
    notes=FP8_NOTE,
))


def quantize_dynamic_per_group_ref(x: torch.Tensor, group_size: int,
                                   qdtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    m, k = x.shape
    xf = _f32(x).reshape(m, k // group_size, group_size)
    amax = xf.abs().amax(dim=-1).clamp_min(1e-12)
    scale = div_by(amax, QMAX[str(qdtype).removeprefix("torch.")])
    return quantize_ref(xf / scale[:, :, None], qdtype).reshape(m, k), scale


register(Task(
    id="quantization/quantize-dynamic-per-group",
    entrypoint="quantize_dynamic_per_group",
    signature=(
        "def quantize_dynamic_per_group(x: torch.Tensor, group_size: int, qdtype: torch.dtype) "
        "-> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Dynamic per-token-group symmetric quantization (the 1 x 128 activation blocks of fine-grained fp8
training and inference): x is a contiguous (M, K) tensor of float32, float16 or bfloat16 whose rows are
cut into groups of group_size consecutive elements (32, 64 or 128, dividing K); qdtype is torch.int8 or
torch.float8_e4m3fn. Return (q, scale): q a new contiguous (M, K) tensor of dtype qdtype and scale a new
contiguous float32 (M, K // group_size) tensor, one scale per group. Rows can be all zeros.
""" + DYNAMIC_RULES,
    reference=quantize_dynamic_per_group_ref,
    make_inputs=lambda case, s: {
        "x": _with_zero_row(s.tensor((case["m"], case["k"]), case["dtype"])),
        "group_size": case["group_size"],
        "qdtype": dtype_of(case["qdtype"]),
    },
    shapes={
        "dev": [
            _quant_case(16, 256, "float32", "int8", group_size=64),
            _quant_case(9, 384, "float16", "float8_e4m3fn", group_size=128),
            _quant_case(20, 96, "float16", "int8", group_size=32),
            _quant_case(8, 128, "bfloat16", "float8_e4m3fn", group_size=128),
        ],
        "heldout": [
            _quant_case(1, 32, "float32", "int8", group_size=32),
            _quant_case(33, 640, "float16", "int8", group_size=128),
            _quant_case(17, 192, "float32", "float8_e4m3fn", group_size=64),
            _quant_case(5, 256, "bfloat16", "int8", group_size=128),
        ],
        "bench": [
            _quant_case(32768, 16384, "bfloat16", "float8_e4m3fn", group_size=128),
            _quant_case(65536, 8192, "float16", "int8", group_size=64),
        ],
    },
    dtypes=("int8", "float8_e4m3fn", "float32", "float16", "bfloat16"),
    tolerances=QUANT_TOLERANCES,
    flops=lambda c: 2 * c["m"] * c["k"],
    bytes=lambda c: _quant_bytes(c) + 4 * c["m"] * (c["k"] // c["group_size"]),
    distributions=("normal", "uniform", "outliers"),
    notes=FP8_NOTE,
))


# ---------------------------------------------------------------------------------------------
# Quantized GEMMs.

def scaled_gemm_ref(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                    out_dtype: torch.dtype) -> torch.Tensor:
    """(a @ b^T) * scale_a[:, None] * scale_b[None, :], exact in float64 (the harness's precision)."""
    acc = a.to(torch.float64) @ b.to(torch.float64).transpose(-1, -2)
    return (acc * scale_a.to(torch.float64)[:, None] * scale_b.to(torch.float64)[None, :]).to(out_dtype)


def _int8_gemm_vendor(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                      out_dtype: torch.dtype) -> torch.Tensor:
    """cuBLASLt int8 GEMM, then the scaling in eager PyTorch (two more kernels)."""
    return (torch._int_mm(a, b.t()).to(torch.float32) * scale_a[:, None] * scale_b[None, :]).to(out_dtype)


def _gemm_case(m: int, n: int, k: int, dtype: str, out: str) -> dict[str, object]:
    return {"m": m, "n": n, "k": k, "dtype": dtype, "out_dtype": out}


GEMM_OUT_TOLERANCES = {
    "float16": Tolerance(1e-2, 1e-2, 2e-3, "fp32 accumulation; fp16 output rounding dominates"),
    "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "fp32 accumulation; bf16 output rounding dominates"),
    "int8": EXACT,
    "float8_e4m3fn": EXACT,
}

register(Task(
    id="quantization/int8-gemm",
    entrypoint="int8_gemm",
    signature=(
        "def int8_gemm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, "
        "out_dtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
int8 GEMM with dequantization (W8A8): a is a contiguous int8 (M, K) tensor of per-token quantized
activations, b a contiguous int8 (N, K) tensor of per-channel quantized weights, scale_a a float32 (M,)
tensor and scale_b a float32 (N,) tensor; out_dtype is torch.float32, torch.float16 or torch.bfloat16.
Return a new contiguous (M, N) tensor of out_dtype with
out[i, j] = float32(sum_k int32(a[i, k]) * int32(b[j, k])) * scale_a[i] * scale_b[j]:
accumulate exactly in int32 (tl.dot of int8 tiles into an int32 accumulator), convert to float32,
scale in float32 and round once. M, N and K are often not multiples of 16.
""",
    reference=scaled_gemm_ref,
    make_inputs=lambda case, s: {
        "a": s.randint(-128, 128, (case["m"], case["k"]), torch.int8),
        "b": s.randint(-128, 128, (case["n"], case["k"]), torch.int8),
        "scale_a": s.uniform((case["m"],), 0.005, 0.02),
        "scale_b": s.uniform((case["n"],), 0.005, 0.02),
        "out_dtype": dtype_of(case["out_dtype"]),
    },
    shapes={
        "dev": [
            _gemm_case(64, 48, 80, "int8", "float16"),
            _gemm_case(100, 70, 90, "int8", "float32"),
        ],
        "heldout": [
            _gemm_case(129, 200, 100, "int8", "float16"),
            _gemm_case(1, 33, 300, "int8", "float32"),
            _gemm_case(65, 128, 17, "int8", "float16"),
        ],
        "bench": [
            _gemm_case(8192, 8192, 8192, "int8", "bfloat16"),
            _gemm_case(4096, 14336, 4096, "int8", "float16"),
        ],
    },
    dtypes=("float32", "float16", "bfloat16", "int8"),
    tolerances={
        "float32": Tolerance(1e-5, 1e-5, 1e-6, "exact int32 sums; three fp32 roundings (~2e-7 relative)"),
        **GEMM_OUT_TOLERANCES,
    },
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + 2 * c["m"] * c["n"],
    bytes=lambda c: c["m"] * c["k"] + c["n"] * c["k"] + 4 * (c["m"] + c["n"])
    + c["m"] * c["n"] * elem_size(c["out_dtype"]),
    distributions=("normal",),
    baselines=(),
    vendor=_int8_gemm_vendor,
    vendor_name="cuBLASLt int8 (torch._int_mm(a, b.t())) + eager PyTorch scaling",
))


def _fp8_values(s, shape) -> torch.Tensor:
    return (s.tensor(shape, torch.float32) * 8.0).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


def _fp8_gemm_vendor(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                     out_dtype: torch.dtype) -> torch.Tensor:
    """cuBLASLt fp8 GEMM with row-wise scales (torch._scaled_mm; bf16 output for row-wise scaling)."""
    return torch._scaled_mm(a, b.t(), scale_a=scale_a[:, None].contiguous(),
                            scale_b=scale_b[None, :].contiguous(), out_dtype=out_dtype)


register(Task(
    id="quantization/fp8-gemm",
    entrypoint="fp8_gemm",
    signature=(
        "def fp8_gemm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, "
        "out_dtype: torch.dtype) -> torch.Tensor"
    ),
    description="""
fp8 GEMM with row-wise scales (W8A8-FP8), as torch._scaled_mm(a, b.t(), scale_a[:, None],
scale_b[None, :], out_dtype=out_dtype): a is a contiguous float8_e4m3fn (M, K) tensor, b a contiguous
float8_e4m3fn (N, K) tensor (weight layout), scale_a a float32 (M,) tensor, scale_b a float32 (N,)
tensor and out_dtype torch.bfloat16, torch.float16 or torch.float32. Return a new contiguous (M, N)
tensor of out_dtype with out[i, j] = (sum_k a[i, k] * b[j, k]) * scale_a[i] * scale_b[j], products and
sums in float32, scaled in float32 and rounded once. Hopper's fp8 tensor cores accumulate in reduced
precision: add each K tile's tl.dot result into a separate float32 accumulator (acc += tl.dot(a, b))
at least every 128 elements of K, or the error grows past the tolerance at large K.
""",
    reference=scaled_gemm_ref,
    make_inputs=lambda case, s: {
        "a": _fp8_values(s, (case["m"], case["k"])),
        "b": _fp8_values(s, (case["n"], case["k"])),
        "scale_a": s.uniform((case["m"],), 0.01, 0.05),
        "scale_b": s.uniform((case["n"],), 0.01, 0.05),
        "out_dtype": dtype_of(case["out_dtype"]),
    },
    shapes={
        "dev": [
            _gemm_case(64, 48, 128, "float8_e4m3fn", "float16"),
            _gemm_case(100, 70, 90, "float8_e4m3fn", "float32"),
        ],
        "heldout": [
            _gemm_case(129, 200, 256, "float8_e4m3fn", "float16"),
            _gemm_case(1, 33, 300, "float8_e4m3fn", "float32"),
            _gemm_case(65, 128, 40, "float8_e4m3fn", "float16"),
        ],
        "bench": [
            _gemm_case(8192, 8192, 8192, "float8_e4m3fn", "bfloat16"),
            _gemm_case(4096, 14336, 4096, "float8_e4m3fn", "bfloat16"),
        ],
    },
    dtypes=("float32", "float16", "bfloat16", "float8_e4m3fn"),
    tolerances={
        "float32": Tolerance(
            1e-3, 1e-3, 5e-4,
            "fp8 products are exact; fp8 tensor cores keep ~14 bits between fp32 promotions (~1e-4)"),
        **GEMM_OUT_TOLERANCES,
    },
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"] + 2 * c["m"] * c["n"],
    bytes=lambda c: c["m"] * c["k"] + c["n"] * c["k"] + 4 * (c["m"] + c["n"])
    + c["m"] * c["n"] * elem_size(c["out_dtype"]),
    distributions=("normal", "uniform"),
    baselines=(),
    vendor=_fp8_gemm_vendor,
    vendor_name="cuBLASLt fp8 with row-wise scales (torch._scaled_mm)",
    notes="fp8 inputs load and convert correctly in Triton's CPU interpreter, so these cases run on a CPU.",
))


# ---------------------------------------------------------------------------------------------
# int4: two signed 4-bit values per byte.

INT4_LAYOUT = """
Packing (fixed): two signed 4-bit two's-complement values per uint8 byte, along K. Byte j of a row
holds element 2j in its LOW nibble (bits 0-3) and element 2j+1 in its HIGH nibble (bits 4-7):
byte = (q[2j] & 0xF) | ((q[2j+1] & 0xF) << 4); a nibble v decodes to v - 16 if v >= 8 else v.
"""


def int4_pack(q: torch.Tensor) -> torch.Tensor:
    """(N, K) integers in [-8, 7] -> (N, K // 2) uint8, element 2j in the low nibble."""
    q = q.to(torch.int32)
    return ((q[:, 0::2] & 0xF) | ((q[:, 1::2] & 0xF) << 4)).to(torch.uint8)


def int4_unpack(packed: torch.Tensor) -> torch.Tensor:
    """(N, K // 2) uint8 -> (N, K) int32 in [-8, 7]."""
    p = packed.to(torch.int32)
    nibbles = torch.stack([p & 0xF, (p >> 4) & 0xF], dim=-1).reshape(p.shape[0], -1)
    return (nibbles ^ 8) - 8


def int4_quantize_pack_ref(w: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    n, k = w.shape
    y = _f32(w).reshape(n, k // group_size, group_size) / _f32(scale)[:, :, None]
    return int4_pack(torch.clamp(torch.round(y), -8, 7).reshape(n, k))


def _int4_case(n: int, k: int, group_size: int, dtype: str) -> dict[str, object]:
    return {"n": n, "k": k, "group_size": group_size, "dtype": dtype}


register(Task(
    id="quantization/int4-quantize-pack",
    entrypoint="int4_quantize_pack",
    signature="def int4_quantize_pack(w: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor",
    description="""
Round-to-nearest int4 weight quantization with per-group scales, packed two values per byte: w is a
contiguous (N, K) tensor of float32, float16 or bfloat16, rows cut into groups of group_size (32, 64 or
128, dividing K; K is even), scale a contiguous float32 (N, K // group_size) tensor. Quantize
q[i, j] = clamp(round_half_even(float32(w[i, j]) / scale[i, j // group_size]), -8, 7), with a correctly
rounded float32 division (tl.math.div_rn in Triton), and return a new contiguous uint8 (N, K // 2)
tensor of packed codes, checked exactly.
""" + INT4_LAYOUT,
    reference=int4_quantize_pack_ref,
    make_inputs=lambda case, s: {
        "w": s.tensor((case["n"], case["k"]), case["dtype"]),
        "scale": s.uniform((case["n"], case["k"] // case["group_size"]), 0.2, 0.5),
        "group_size": case["group_size"],
    },
    shapes={
        "dev": [
            _int4_case(16, 256, 64, "float32"),
            _int4_case(9, 384, 128, "float16"),
            _int4_case(8, 128, 32, "bfloat16"),
        ],
        "heldout": [
            _int4_case(1, 32, 32, "float32"),
            _int4_case(33, 640, 128, "float16"),
            _int4_case(17, 192, 64, "float32"),
            _int4_case(5, 256, 128, "bfloat16"),
        ],
        "bench": [
            _int4_case(28672, 8192, 128, "bfloat16"),
            _int4_case(16384, 16384, 64, "float16"),
        ],
    },
    dtypes=("uint8", "float32", "float16", "bfloat16"),
    tolerances={"uint8": EXACT},
    flops=lambda c: c["n"] * c["k"],
    bytes=lambda c: c["n"] * c["k"] * elem_size(c["dtype"]) + c["n"] * c["k"] // 2
    + 4 * c["n"] * (c["k"] // c["group_size"]),
    distributions=("normal", "uniform", "outliers"),
))


def int4_dequantize_ref(packed: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor:
    q = int4_unpack(packed)
    n, k = q.shape
    return (q.to(scale.dtype).reshape(n, k // group_size, group_size) * scale[:, :, None]).reshape(n, k)


def _int4_inputs(case, s):
    n, k = case["n"], case["k"]
    return {
        "packed": s.randint(0, 256, (n, k // 2), torch.uint8),
        "scale": s.uniform((n, k // case["group_size"]), 0.005, 0.05).to(dtype_of(case["dtype"])),
        "group_size": case["group_size"],
    }


register(Task(
    id="quantization/int4-dequantize",
    entrypoint="int4_dequantize",
    signature=(
        "def int4_dequantize(packed: torch.Tensor, scale: torch.Tensor, group_size: int) -> torch.Tensor"
    ),
    description="""
Unpack and dequantize int4 weights with per-group scales: packed is a contiguous uint8 (N, K // 2)
tensor of packed codes, scale a contiguous (N, K // group_size) tensor of float32, float16 or bfloat16
(group_size 32, 64 or 128, dividing K). Return a new contiguous (N, K) tensor of the scale's dtype with
out[i, j] = q[i, j] * scale[i, j // group_size] computed in float32 and rounded once, where q[i, j] is
the signed 4-bit code of element j of row i.
""" + INT4_LAYOUT,
    reference=int4_dequantize_ref,
    make_inputs=_int4_inputs,
    shapes={
        "dev": [
            _int4_case(16, 256, 64, "float32"),
            _int4_case(9, 384, 128, "float16"),
            _int4_case(8, 128, 32, "bfloat16"),
        ],
        "heldout": [
            _int4_case(1, 32, 32, "float32"),
            _int4_case(33, 640, 128, "float16"),
            _int4_case(17, 192, 64, "float32"),
            _int4_case(5, 256, 128, "bfloat16"),
        ],
        "bench": [
            _int4_case(28672, 8192, 128, "bfloat16"),
            _int4_case(16384, 16384, 64, "float16"),
        ],
    },
    dtypes=("float32", "float16", "bfloat16", "uint8"),
    tolerances=DEQUANT_TOLERANCES,
    flops=lambda c: c["n"] * c["k"],
    bytes=lambda c: c["n"] * c["k"] // 2
    + (c["n"] * c["k"] + c["n"] * (c["k"] // c["group_size"])) * elem_size(c["dtype"]),
    distributions=("normal",),
))


def w4a16_gemm_ref(x: torch.Tensor, packed: torch.Tensor, scale: torch.Tensor,
                   group_size: int) -> torch.Tensor:
    return x @ int4_dequantize_ref(packed, scale, group_size).transpose(0, 1)


def _w4a16_inputs(case, s):
    n, k = case["n"], case["k"]
    return {
        "x": s.tensor((case["m"], k), case["dtype"]),
        "packed": s.randint(0, 256, (n, k // 2), torch.uint8),
        "scale": s.uniform((n, k // case["group_size"]), 0.01, 0.03).to(dtype_of(case["dtype"])),
        "group_size": case["group_size"],
    }


register(Task(
    id="quantization/w4a16-gemm",
    entrypoint="w4a16_gemm",
    signature=(
        "def w4a16_gemm(x: torch.Tensor, packed: torch.Tensor, scale: torch.Tensor, group_size: int) "
        "-> torch.Tensor"
    ),
    description="""
Weight-only int4 linear layer (W4A16, as in GPTQ/AWQ inference): out = x @ W^T, where x is a
contiguous (M, K) tensor of float16 or bfloat16 and W (N, K) is given as packed int4 codes (packed, a
contiguous uint8 (N, K // 2) tensor) with per-group scales (scale, a contiguous (N, K // group_size)
tensor of x's dtype; group_size 32, 64 or 128, dividing K): W[i, j] = q[i, j] * scale[i, j // group_size].
Return a new contiguous (M, N) tensor of x's dtype. Dequantize tiles of W inside the GEMM (never
materialise W in global memory), accumulate in float32 and round once; rounding the dequantized
weights to x's dtype before tl.dot is fine. M ranges from a few tokens to thousands.
""" + INT4_LAYOUT,
    reference=w4a16_gemm_ref,
    make_inputs=_w4a16_inputs,
    shapes={
        "dev": [
            {"m": 16, "n": 64, "k": 256, "group_size": 64, "dtype": "float16"},
            {"m": 5, "n": 100, "k": 384, "group_size": 128, "dtype": "float16"},
            {"m": 33, "n": 48, "k": 128, "group_size": 32, "dtype": "bfloat16"},
        ],
        "heldout": [
            {"m": 1, "n": 130, "k": 256, "group_size": 128, "dtype": "float16"},
            {"m": 70, "n": 96, "k": 192, "group_size": 64, "dtype": "float16"},
            {"m": 20, "n": 64, "k": 256, "group_size": 32, "dtype": "bfloat16"},
            # K an odd number of groups (5 x 32): no power-of-two K tile above 32 divides it
            {"m": 9, "n": 40, "k": 160, "group_size": 32, "dtype": "float16"},
        ],
        "bench": [
            {"m": 16, "n": 28672, "k": 8192, "group_size": 128, "dtype": "bfloat16"},
            {"m": 4096, "n": 8192, "k": 8192, "group_size": 128, "dtype": "float16"},
        ],
    },
    dtypes=("float16", "bfloat16"),
    tolerances={
        "float16": Tolerance(2e-2, 1e-2, 2e-3, "fp16-rounded dequantized weights (allowed) miss by ~2e-4 of "
                             "the output's RMS, which reaches ~5 at K = 8192: ~1e-3 absolute, 5e-3 at worst"),
        "bfloat16": Tolerance(1e-1, 2e-2, 1e-2, "bf16-rounded dequantized weights (allowed) miss by ~1.6e-3 "
                              "of the output's RMS (~5 at K = 8192): 0.076 at worst on the H200"),
    },
    flops=lambda c: 2 * c["m"] * c["n"] * c["k"],
    bytes=lambda c: c["n"] * c["k"] // 2
    + (c["m"] * c["k"] + c["n"] * (c["k"] // c["group_size"]) + c["m"] * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "uniform"),
))
