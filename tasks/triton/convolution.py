"""Convolutions: direct and implicit-GEMM 1-D/2-D convolutions, depthwise, causal and transposed.

Weights are drawn with standard deviation 1/sqrt(fan_in), so outputs are O(1) and the tolerances
are those of fp32 accumulation followed by one rounding to the output dtype.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

_TOL = {
    "float32": Tolerance(1e-5, 1e-4, 1e-5, "fp32 accumulation of at most a few hundred O(1) products"),
    "float16": Tolerance(2e-3, 1e-2, 2e-3, "fp32 accumulation is near exact; fp16 output rounding (4.9e-4) "
                         "dominates, outputs O(1)"),
    "bfloat16": Tolerance(2e-2, 2e-2, 1e-2, "bf16 output rounding (3.9e-3 relative) dominates, outputs O(1)"),
}
_GEMM_DTYPES = ("float16", "bfloat16")
_DISTS = ("normal", "uniform")


def _conv_out(size: int, k: int, s: int, p: int, d: int = 1) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _weight(s, shape: tuple[int, ...], fan_in: int, dtype: str) -> torch.Tensor:
    return s.normal(shape, dtype, std=1.0 / math.sqrt(fan_in))


# ------------------------------------------------------------------------------------ 2-D, dense
def _c2(n, ci, h, w, co, k, dtype, s=1, p=None, d=1) -> dict:
    return {"n": n, "ci": ci, "h": h, "w": w, "co": co, "k": k, "s": s, "p": (k // 2) * d if p is None else p,
            "d": d, "dtype": dtype}


def _conv2d_inputs(case, s):
    ci, k, dt = case["ci"], case["k"], case["dtype"]
    return {
        "x": s.tensor((case["n"], ci, case["h"], case["w"]), dt),
        "weight": _weight(s, (case["co"], ci, k, k), ci * k * k, dt),
        "bias": s.normal((case["co"],), dt, std=0.5),
    }


def _conv2d_oh_ow(c) -> tuple[int, int]:
    return (_conv_out(c["h"], c["k"], c["s"], c["p"], c["d"]),
            _conv_out(c["w"], c["k"], c["s"], c["p"], c["d"]))


def _conv2d_flops(c) -> int:
    oh, ow = _conv2d_oh_ow(c)
    return 2 * c["n"] * c["co"] * oh * ow * c["ci"] * c["k"] * c["k"]


def _conv2d_bytes(c) -> int:
    oh, ow = _conv2d_oh_ow(c)
    elems = (c["n"] * c["ci"] * c["h"] * c["w"] + c["co"] * c["ci"] * c["k"] ** 2 + c["co"]
             + c["n"] * c["co"] * oh * ow)
    return elems * elem_size(c["dtype"])


_CONV2D_SHAPE_RULES = """
x is a contiguous (N, C_in, H, W) tensor, weight a contiguous (C_out, C_in, K, K) tensor and bias a (C_out,)
tensor, all of one dtype (float16 or bfloat16). Accumulate in float32 and return a new contiguous
(N, C_out, OH, OW) tensor of that dtype, OH = (H + 2 * padding - dilation * (K - 1) - 1) // stride + 1 and
likewise OW. C_in is often small or not a multiple of 16 (3 for an RGB input). An implicit GEMM (output
pixels x output channels, reducing over C_in * K * K) maps onto tensor cores.
"""

register(Task(
    id="convolution/conv2d-3x3",
    entrypoint="conv2d_3x3",
    signature="def conv2d_3x3(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor",
    description="""
3x3 convolution with stride 1 and padding 1 (same size output), as
torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1):"""
    + _CONV2D_SHAPE_RULES,
    reference=lambda x, weight, bias: F.conv2d(x, weight, bias, stride=1, padding=1),
    make_inputs=_conv2d_inputs,
    shapes={
        "dev": [_c2(2, 4, 8, 8, 8, 3, "float16"), _c2(1, 3, 10, 12, 16, 3, "float16"),
                _c2(1, 16, 8, 8, 32, 3, "bfloat16")],
        "heldout": [_c2(1, 1, 1, 1, 1, 3, "float16"), _c2(2, 20, 9, 7, 24, 3, "float16"),
                    _c2(1, 33, 6, 6, 17, 3, "float16"), _c2(1, 8, 5, 5, 8, 3, "bfloat16")],
        "bench": [_c2(128, 256, 56, 56, 256, 3, "bfloat16"), _c2(64, 128, 112, 112, 128, 3, "float16")],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=_conv2d_flops,
    bytes=_conv2d_bytes,
    distributions=_DISTS,
    vendor=lambda x, weight, bias: F.conv2d(x, weight, bias, stride=1, padding=1),
    vendor_name="cuDNN (torch.nn.functional.conv2d)",
))

register(Task(
    id="convolution/conv2d-3x3-stride2",
    entrypoint="conv2d_3x3_stride2",
    signature=(
        "def conv2d_3x3_stride2(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor"
    ),
    description="""
3x3 convolution with stride 2 and padding 1 (a downsampling layer), as
torch.nn.functional.conv2d(x, weight, bias, stride=2, padding=1); H and W may be odd:"""
    + _CONV2D_SHAPE_RULES,
    reference=lambda x, weight, bias: F.conv2d(x, weight, bias, stride=2, padding=1),
    make_inputs=_conv2d_inputs,
    shapes={
        "dev": [_c2(2, 4, 8, 8, 8, 3, "float16", s=2), _c2(1, 3, 11, 12, 16, 3, "float16", s=2),
                _c2(1, 16, 8, 8, 32, 3, "bfloat16", s=2)],
        "heldout": [_c2(1, 1, 1, 1, 1, 3, "float16", s=2), _c2(2, 20, 9, 7, 24, 3, "float16", s=2),
                    _c2(1, 33, 13, 13, 17, 3, "float16", s=2), _c2(1, 8, 5, 5, 8, 3, "bfloat16", s=2)],
        "bench": [_c2(128, 256, 112, 112, 256, 3, "bfloat16", s=2),
                  _c2(64, 128, 224, 224, 128, 3, "float16", s=2)],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=_conv2d_flops,
    bytes=_conv2d_bytes,
    distributions=_DISTS,
    vendor=lambda x, weight, bias: F.conv2d(x, weight, bias, stride=2, padding=1),
    vendor_name="cuDNN (torch.nn.functional.conv2d)",
))


def _conv2d_general_inputs(case, s):
    return {**_conv2d_inputs(case, s), "stride": case["s"], "padding": case["p"]}


register(Task(
    id="convolution/conv2d",
    entrypoint="conv2d",
    signature=(
        "def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, padding: int"
        ") -> torch.Tensor"
    ),
    description="""
General square-kernel convolution, as torch.nn.functional.conv2d(x, weight, bias, stride=stride,
padding=padding): the kernel size K (1, 3, 5 or 7, e.g. a 7x7 stride-2 stem) comes from weight's shape,
stride and padding are ints (padding <= K // 2), dilation is 1:"""
    + _CONV2D_SHAPE_RULES,
    reference=lambda x, weight, bias, stride, padding: F.conv2d(x, weight, bias, stride=stride,
                                                                padding=padding),
    make_inputs=_conv2d_general_inputs,
    shapes={
        "dev": [_c2(1, 3, 16, 16, 16, 7, "float16", s=2, p=3), _c2(2, 8, 9, 9, 8, 5, "float16", s=1, p=2),
                _c2(1, 16, 8, 8, 16, 1, "bfloat16", s=2, p=0)],
        "heldout": [_c2(1, 1, 2, 2, 1, 1, "float16", s=1, p=0), _c2(2, 5, 17, 15, 24, 7, "float16", s=2, p=3),
                    _c2(1, 20, 11, 11, 12, 5, "float16", s=3, p=1),
                    _c2(1, 8, 5, 5, 8, 3, "bfloat16", s=1, p=0),
                    _c2(1, 32, 6, 5, 24, 3, "float16", s=2, p=1),
                    # channels a multiple of 16 (a kernel may then step tap by tap) with the padding
                    # reaching past the last row and column: the edge a row-bound mask gets wrong
                    _c2(1, 16, 7, 7, 8, 3, "float16", s=1, p=1)],
        "bench": [_c2(256, 3, 224, 224, 64, 7, "bfloat16", s=2, p=3),
                  _c2(64, 256, 56, 56, 256, 5, "float16", s=1, p=2)],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=_conv2d_flops,
    bytes=_conv2d_bytes,
    distributions=_DISTS,
    vendor=lambda x, weight, bias, stride, padding: F.conv2d(x, weight, bias, stride=stride, padding=padding),
    vendor_name="cuDNN (torch.nn.functional.conv2d)",
))


def _dilated_inputs(case, s):
    return {**_conv2d_inputs(case, s), "dilation": case["d"]}


register(Task(
    id="convolution/dilated-conv2d",
    entrypoint="dilated_conv2d",
    signature=(
        "def dilated_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, dilation: int"
        ") -> torch.Tensor"
    ),
    description="""
Dilated (atrous) 3x3 convolution with stride 1 and padding = dilation (same size output), as
torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=dilation, dilation=dilation): the taps are
`dilation` pixels apart, so tap (kh, kw) of output (oh, ow) reads x at (oh + (kh - 1) * dilation,
ow + (kw - 1) * dilation), zero outside the image:"""
    + _CONV2D_SHAPE_RULES,
    performance_note=(
        "0.84x cuDNN at the bf16 bench case (d=2) and 0.71x eager at the fp16 one (d=6) on the H200, "
        "2026-12-01 (scripts/triton_ref_sweep.py, four tile configs of the implicit GEMM). Likely "
        "cause, not profiled: with dilation 6 the nine taps of a tile read rows 6 pixels apart, so "
        "each K step loads a strided window that cuDNN's dedicated dilated kernels stage once; not "
        "reached yet with Triton"
    ),
    reference=lambda x, weight, bias, dilation: F.conv2d(x, weight, bias, stride=1, padding=dilation,
                                                         dilation=dilation),
    make_inputs=_dilated_inputs,
    shapes={
        "dev": [_c2(2, 4, 8, 8, 8, 3, "float16", d=2), _c2(1, 3, 10, 12, 16, 3, "float16", d=4),
                _c2(1, 16, 8, 8, 32, 3, "bfloat16", d=2)],
        "heldout": [_c2(1, 1, 1, 1, 1, 3, "float16", d=2), _c2(2, 20, 9, 7, 24, 3, "float16", d=3),
                    _c2(1, 33, 16, 16, 17, 3, "float16", d=6), _c2(1, 8, 5, 5, 8, 3, "bfloat16", d=2),
                    _c2(1, 32, 7, 6, 16, 3, "float16", d=2)],
        "bench": [_c2(64, 256, 64, 64, 256, 3, "bfloat16", d=2),
                  _c2(32, 512, 64, 64, 256, 3, "float16", d=6)],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=_conv2d_flops,
    bytes=_conv2d_bytes,
    distributions=_DISTS,
    vendor=lambda x, weight, bias, dilation: F.conv2d(x, weight, bias, stride=1, padding=dilation,
                                                      dilation=dilation),
    vendor_name="cuDNN (torch.nn.functional.conv2d)",
))

register(Task(
    id="convolution/pointwise-conv",
    entrypoint="pointwise_conv",
    signature="def pointwise_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor",
    description="""
1x1 (pointwise) convolution, as torch.nn.functional.conv2d(x, weight, bias): x is a contiguous
(N, C_in, H, W) tensor, weight a contiguous (C_out, C_in, 1, 1) tensor and bias (C_out,), one dtype
(float16 or bfloat16); out[n, co, h, w] = bias[co] + sum_ci weight[co, ci] * x[n, ci, h, w]. Per image
this is the GEMM weight (C_out x C_in) @ x[n] (C_in x H*W). Accumulate in float32; return a new
contiguous (N, C_out, H, W) tensor of the input dtype.
""",
    reference=lambda x, weight, bias: F.conv2d(x, weight, bias),
    make_inputs=_conv2d_inputs,
    shapes={
        "dev": [_c2(2, 4, 8, 8, 8, 1, "float16"), _c2(1, 48, 10, 12, 16, 1, "float16"),
                _c2(1, 16, 8, 8, 32, 1, "bfloat16")],
        "heldout": [_c2(1, 1, 1, 1, 1, 1, "float16"), _c2(2, 20, 9, 7, 24, 1, "float16"),
                    _c2(1, 100, 13, 13, 70, 1, "float16"), _c2(1, 8, 5, 5, 8, 1, "bfloat16")],
        "bench": [_c2(128, 256, 56, 56, 1024, 1, "bfloat16"), _c2(64, 512, 28, 28, 2048, 1, "float16")],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=_conv2d_flops,
    bytes=_conv2d_bytes,
    distributions=_DISTS,
    vendor=lambda x, weight, bias: F.conv2d(x, weight, bias),
    vendor_name="cuDNN (torch.nn.functional.conv2d)",
))


# ------------------------------------------------------------------------------------- depthwise
def _dw_inputs(case, s):
    c, k, dt = case["c"], case["k"], case["dtype"]
    return {"x": s.tensor((case["n"], c, case["h"], case["w"]), dt),
            "weight": _weight(s, (c, 1, k, k), k * k, dt), "bias": s.normal((c,), dt, std=0.5)}


def _dw(n, c, h, w, k, dtype) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "k": k, "dtype": dtype}


def _dw_numel(c) -> int:
    return c["n"] * c["c"] * c["h"] * c["w"]


register(Task(
    id="convolution/depthwise-conv2d",
    entrypoint="depthwise_conv2d",
    signature=(
        "def depthwise_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor"
    ),
    description="""
Depthwise KxK convolution with stride 1 and padding K // 2 (K odd: 3, 5 or 7), as
torch.nn.functional.conv2d(x, weight, bias, padding=K // 2, groups=C): x is a contiguous (N, C, H, W)
tensor, weight a contiguous (C, 1, K, K) tensor and bias (C,), one dtype (float32, float16 or bfloat16);
each channel is convolved with its own KxK filter:
out[n, c, h, w] = bias[c] + sum_{kh, kw} weight[c, 0, kh, kw] * x[n, c, h + kh - K // 2, w + kw - K // 2]
(zero outside the image). Accumulate in float32; return a new contiguous (N, C, H, W) tensor. There is
no channel reduction, so this is memory-bound: read each input element from DRAM once.
""",
    reference=lambda x, weight, bias: F.conv2d(x, weight, bias, padding=weight.shape[-1] // 2,
                                               groups=x.shape[1]),
    make_inputs=_dw_inputs,
    shapes={
        "dev": [_dw(2, 3, 8, 8, 3, "float32"), _dw(1, 16, 12, 10, 5, "float16"),
                _dw(1, 8, 9, 9, 7, "bfloat16")],
        "heldout": [_dw(1, 1, 1, 1, 3, "float32"), _dw(2, 6, 17, 13, 7, "float32"),
                    _dw(1, 33, 16, 16, 3, "float16"),
                    _dw(1, 8, 5, 5, 5, "bfloat16")],
        "bench": [_dw(128, 384, 56, 56, 3, "bfloat16"), _dw(64, 256, 56, 56, 7, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_TOL,
    flops=lambda c: 2 * _dw_numel(c) * c["k"] * c["k"],
    bytes=lambda c: (2 * _dw_numel(c) + c["c"] * (c["k"] ** 2 + 1)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------------- 1-D
def _c1(n, ci, length, co, k, s, p, dtype) -> dict:
    return {"n": n, "ci": ci, "l": length, "co": co, "k": k, "s": s, "p": p, "dtype": dtype}


def _conv1d_inputs(case, s):
    ci, k, dt = case["ci"], case["k"], case["dtype"]
    return {"x": s.tensor((case["n"], ci, case["l"]), dt),
            "weight": _weight(s, (case["co"], ci, k), ci * k, dt),
            "bias": s.normal((case["co"],), dt, std=0.5), "stride": case["s"], "padding": case["p"]}


def _conv1d_ol(c) -> int:
    return _conv_out(c["l"], c["k"], c["s"], c["p"])


register(Task(
    id="convolution/conv1d",
    entrypoint="conv1d",
    signature=(
        "def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, padding: int"
        ") -> torch.Tensor"
    ),
    description="""
1-D convolution, as torch.nn.functional.conv1d(x, weight, bias, stride=stride, padding=padding): x is a
contiguous (N, C_in, L) tensor, weight a contiguous (C_out, C_in, K) tensor, bias (C_out,), one dtype
(float16 or bfloat16); out[n, co, o] = bias[co] + sum_{ci, k} weight[co, ci, k] * x[n, ci, o * stride -
padding + k] (zero outside [0, L)), OL = (L + 2 * padding - K) // stride + 1. Accumulate in float32;
return a new contiguous (N, C_out, OL) tensor of the input dtype.
""",
    reference=lambda x, weight, bias, stride, padding: F.conv1d(x, weight, bias, stride=stride,
                                                                padding=padding),
    make_inputs=_conv1d_inputs,
    shapes={
        "dev": [_c1(2, 4, 50, 8, 3, 1, 1, "float16"), _c1(1, 16, 100, 32, 5, 2, 2, "float16"),
                _c1(1, 8, 64, 16, 3, 1, 0, "bfloat16")],
        "heldout": [_c1(1, 1, 1, 1, 1, 1, 0, "float16"), _c1(2, 20, 333, 24, 7, 3, 3, "float16"),
                    _c1(3, 33, 77, 17, 4, 1, 2, "float16"), _c1(1, 8, 50, 8, 3, 2, 1, "bfloat16")],
        "bench": [_c1(64, 512, 16384, 512, 3, 1, 1, "bfloat16"),
                  _c1(32, 256, 32768, 256, 5, 2, 2, "float16")],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=lambda c: 2 * c["n"] * c["co"] * _conv1d_ol(c) * c["ci"] * c["k"],
    bytes=lambda c: (c["n"] * c["ci"] * c["l"] + c["co"] * c["ci"] * c["k"] + c["co"]
                     + c["n"] * c["co"] * _conv1d_ol(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
    vendor=lambda x, weight, bias, stride, padding: F.conv1d(x, weight, bias, stride=stride, padding=padding),
    vendor_name="cuDNN (torch.nn.functional.conv1d)",
))


def _causal_ref(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, silu: bool) -> torch.Tensor:
    k = weight.shape[1]
    out = F.conv1d(x, weight.unsqueeze(1), bias, padding=k - 1, groups=x.shape[1])[..., : x.shape[-1]]
    return F.silu(out) if silu else out


def _causal_inputs(case, s):
    d, k, dt = case["d"], case["k"], case["dtype"]
    return {"x": s.tensor((case["b"], d, case["l"]), dt), "weight": _weight(s, (d, k), k, dt),
            "bias": s.normal((d,), dt, std=0.5), "silu": case["silu"]}


def _cc(b, d, length, k, silu, dtype) -> dict:
    return {"b": b, "d": d, "l": length, "k": k, "silu": silu, "dtype": dtype}


register(Task(
    id="convolution/causal-conv1d",
    entrypoint="causal_conv1d",
    signature=(
        "def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, silu: bool"
        ") -> torch.Tensor"
    ),
    description="""
The short causal depthwise convolution of Mamba blocks: x is a contiguous (B, D, L) tensor, weight a
contiguous (D, K) tensor (K from 2 to 4), bias (D,), one dtype (float32, float16 or bfloat16);
y[b, d, t] = bias[d] + sum_{k < K} weight[d, k] * x[b, d, t - (K - 1) + k], positions t' < 0 counting as
zero (each output sees only the present and the past), and out = y * sigmoid(y) (SiLU) when silu is
True, else y. Equivalent to torch.nn.functional.conv1d(x, weight.unsqueeze(1), bias, padding=K - 1,
groups=D)[..., :L]. Compute in float32; return a new contiguous (B, D, L) tensor of the input dtype.
""",
    reference=_causal_ref,
    make_inputs=_causal_inputs,
    shapes={
        "dev": [_cc(2, 4, 50, 4, True, "float32"), _cc(1, 16, 100, 3, False, "float16"),
                _cc(1, 8, 64, 4, True, "bfloat16")],
        "heldout": [_cc(1, 1, 1, 4, True, "float32"), _cc(2, 20, 333, 2, False, "float32"),
                    _cc(3, 33, 77, 4, True, "float16"), _cc(1, 8, 50, 3, True, "bfloat16")],
        "bench": [_cc(8, 4096, 8192, 4, True, "bfloat16"), _cc(8, 2048, 8192, 4, True, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_TOL,
    flops=lambda c: c["b"] * c["d"] * c["l"] * (2 * c["k"] + (5 if c["silu"] else 0)),
    bytes=lambda c: (2 * c["b"] * c["d"] * c["l"] + c["d"] * (c["k"] + 1)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


# ------------------------------------------------------------------------------------ transposed
def _t1(n, ci, length, co, k, s, p, dtype) -> dict:
    return {"n": n, "ci": ci, "l": length, "co": co, "k": k, "s": s, "p": p, "dtype": dtype}


def _convt1d_inputs(case, s):
    ci, co, k, dt = case["ci"], case["co"], case["k"], case["dtype"]
    return {"x": s.tensor((case["n"], ci, case["l"]), dt), "weight": _weight(s, (ci, co, k), ci * k, dt),
            "bias": s.normal((co,), dt, std=0.5), "stride": case["s"], "padding": case["p"]}


def _convt1d_ol(c) -> int:
    return (c["l"] - 1) * c["s"] - 2 * c["p"] + c["k"]


register(Task(
    id="convolution/conv-transpose1d",
    entrypoint="conv_transpose1d",
    signature=(
        "def conv_transpose1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, "
        "padding: int) -> torch.Tensor"
    ),
    description="""
1-D transposed convolution (the upsampling of vocoders and decoders), as
torch.nn.functional.conv_transpose1d(x, weight, bias, stride=stride, padding=padding): x is a contiguous
(N, C_in, L) tensor, weight a contiguous (C_in, C_out, K) tensor (note the order), bias (C_out,), one
dtype (float16 or bfloat16). Every input x[n, ci, i] adds x[n, ci, i] * weight[ci, co, k] to
out[n, co, i * stride - padding + k] (contributions landing outside [0, OL) are dropped), plus bias[co];
OL = (L - 1) * stride - 2 * padding + K (padding < K). Accumulate in float32 and return a new contiguous
(N, C_out, OL) tensor. Gathering per output (which inputs and taps reach it) avoids atomics.
""",
    reference=lambda x, weight, bias, stride, padding: F.conv_transpose1d(x, weight, bias, stride=stride,
                                                                          padding=padding),
    make_inputs=_convt1d_inputs,
    shapes={
        "dev": [_t1(2, 4, 20, 8, 4, 2, 1, "float16"), _t1(1, 16, 30, 32, 3, 1, 1, "float16"),
                _t1(1, 8, 16, 16, 8, 4, 2, "bfloat16")],
        "heldout": [_t1(1, 1, 1, 1, 1, 1, 0, "float16"), _t1(2, 20, 33, 24, 5, 3, 2, "float16"),
                    _t1(3, 33, 17, 17, 16, 8, 4, "float16"), _t1(1, 8, 10, 8, 4, 2, 1, "bfloat16"),
                    # channels a multiple of 16 (a kernel may step tap by tap) and K not a multiple of
                    # the stride: one residue's last tap is past the kernel
                    _t1(1, 16, 9, 8, 5, 2, 1, "float16")],
        "bench": [_t1(32, 512, 8192, 256, 16, 8, 4, "bfloat16"),
                  _t1(32, 256, 16384, 256, 4, 2, 1, "float16")],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=lambda c: 2 * c["n"] * c["ci"] * c["l"] * c["co"] * c["k"],
    bytes=lambda c: (c["n"] * c["ci"] * c["l"] + c["ci"] * c["co"] * c["k"] + c["co"]
                     + c["n"] * c["co"] * _convt1d_ol(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
    vendor=lambda x, weight, bias, stride, padding: F.conv_transpose1d(x, weight, bias, stride=stride,
                                                                       padding=padding),
    vendor_name="cuDNN (torch.nn.functional.conv_transpose1d)",
))


def _t2(n, ci, h, w, co, k, s, p, dtype) -> dict:
    return {"n": n, "ci": ci, "h": h, "w": w, "co": co, "k": k, "s": s, "p": p, "dtype": dtype}


def _convt2d_inputs(case, s):
    ci, co, k, dt = case["ci"], case["co"], case["k"], case["dtype"]
    return {"x": s.tensor((case["n"], ci, case["h"], case["w"]), dt),
            "weight": _weight(s, (ci, co, k, k), ci * k * k, dt),
            "bias": s.normal((co,), dt, std=0.5), "stride": case["s"], "padding": case["p"]}


def _convt2d_out(c) -> tuple[int, int]:
    return ((c["h"] - 1) * c["s"] - 2 * c["p"] + c["k"], (c["w"] - 1) * c["s"] - 2 * c["p"] + c["k"])


register(Task(
    id="convolution/conv-transpose2d",
    entrypoint="conv_transpose2d",
    signature=(
        "def conv_transpose2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int, "
        "padding: int) -> torch.Tensor"
    ),
    description="""
2-D transposed convolution (a decoder's or U-Net's upsampling layer), as
torch.nn.functional.conv_transpose2d(x, weight, bias, stride=stride, padding=padding): x is a contiguous
(N, C_in, H, W) tensor, weight a contiguous (C_in, C_out, K, K) tensor (note the order), bias (C_out,),
one dtype (float16 or bfloat16). Every input x[n, ci, i, j] adds x[n, ci, i, j] * weight[ci, co, kh, kw] to
out[n, co, i * stride - padding + kh, j * stride - padding + kw] (contributions outside the output are
dropped), plus bias[co]; OH = (H - 1) * stride - 2 * padding + K and likewise OW (padding < K).
Accumulate in float32 and return a new contiguous (N, C_out, OH, OW) tensor.
""",
    reference=lambda x, weight, bias, stride, padding: F.conv_transpose2d(x, weight, bias, stride=stride,
                                                                          padding=padding),
    make_inputs=_convt2d_inputs,
    shapes={
        "dev": [_t2(2, 4, 5, 5, 8, 4, 2, 1, "float16"), _t2(1, 16, 6, 7, 16, 3, 1, 1, "float16"),
                _t2(1, 8, 4, 4, 16, 2, 2, 0, "bfloat16")],
        "heldout": [_t2(1, 1, 1, 1, 1, 1, 1, 0, "float16"), _t2(2, 20, 9, 7, 24, 3, 2, 1, "float16"),
                    _t2(1, 33, 6, 6, 17, 4, 2, 1, "float16"), _t2(1, 8, 5, 5, 8, 4, 2, 1, "bfloat16"),
                    # channels a multiple of 16 and K not a multiple of the stride, as for conv-transpose1d
                    _t2(1, 16, 5, 5, 8, 3, 2, 1, "float16"),
                    # a stride and a padding no dev case has: a kernel written for strides 1 and 2 fails
                    _t2(1, 12, 4, 5, 10, 5, 3, 2, "float16")],
        "bench": [_t2(64, 512, 32, 32, 256, 4, 2, 1, "bfloat16"),
                  _t2(32, 256, 64, 64, 128, 4, 2, 1, "float16")],
    },
    dtypes=_GEMM_DTYPES,
    tolerances=_TOL,
    flops=lambda c: 2 * c["n"] * c["ci"] * c["h"] * c["w"] * c["co"] * c["k"] * c["k"],
    bytes=lambda c: (c["n"] * c["ci"] * c["h"] * c["w"] + c["ci"] * c["co"] * c["k"] ** 2 + c["co"]
                     + c["n"] * c["co"] * _convt2d_out(c)[0] * _convt2d_out(c)[1]) * elem_size(c["dtype"]),
    distributions=_DISTS,
    vendor=lambda x, weight, bias, stride, padding: F.conv_transpose2d(x, weight, bias, stride=stride,
                                                                       padding=padding),
    vendor_name="cuDNN (torch.nn.functional.conv_transpose2d)",
))
