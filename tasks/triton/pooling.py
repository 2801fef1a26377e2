"""Pooling: windowed max, average and power-average over 1-D and 2-D inputs (NCL / NCHW)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import register
from ..spec import Task, Tolerance, elem_size

_MAX_TOL = {d: Tolerance(0.0, 0.0, 0.0, "a maximum selects an input value: exact")
            for d in ("float32", "float16", "bfloat16", "int64")}
_AVG_TOL = {
    "float32": Tolerance(1e-5, 1e-5, 1e-6, "a mean of at most a few thousand values: a few fp32 ulps"),
    "float16": Tolerance(1e-3, 1e-2, 2e-3, "fp16 output rounding (4.9e-4 relative), fp32 accumulation"),
    "bfloat16": Tolerance(8e-3, 3e-2, 1e-2, "bf16 output rounding (3.9e-3 relative), fp32 accumulation"),
}
_DISTS = ("normal", "outliers", "large")


def _out(size: int, k: int, s: int, p: int) -> int:
    return (size + 2 * p - k) // s + 1


def _p2(n: int, c: int, h: int, w: int, k: int, s: int, p: int, dtype: str) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "k": k, "s": s, "p": p, "dtype": dtype}


def _p1(n: int, c: int, length: int, k: int, s: int, p: int, dtype: str) -> dict:
    return {"n": n, "c": c, "l": length, "k": k, "s": s, "p": p, "dtype": dtype}


def _in2(c) -> int:
    return c["n"] * c["c"] * c["h"] * c["w"]


def _out2(c) -> int:
    return c["n"] * c["c"] * _out(c["h"], c["k"], c["s"], c["p"]) * _out(c["w"], c["k"], c["s"], c["p"])


def _out1(c) -> int:
    return c["n"] * c["c"] * _out(c["l"], c["k"], c["s"], c["p"])


def _window2_inputs(case, s):
    return {"x": s.tensor((case["n"], case["c"], case["h"], case["w"]), case["dtype"]),
            "kernel_size": case["k"], "stride": case["s"], "padding": case["p"]}


def _window1_inputs(case, s):
    return {"x": s.tensor((case["n"], case["c"], case["l"]), case["dtype"]),
            "kernel_size": case["k"], "stride": case["s"], "padding": case["p"]}


_WINDOW_RULES = """
Square windows of kernel_size x kernel_size, moved by stride in both directions, over the input
padded by `padding` on every side (padding <= kernel_size // 2); the output is (N, C, OH, OW) with
OH = (H + 2 * padding - kernel_size) // stride + 1 (floor, ceil_mode=False) and likewise OW.
"""

_2D_SHAPES = {
    "dev": [_p2(2, 3, 10, 10, 3, 2, 1, "float32"), _p2(1, 4, 32, 32, 2, 2, 0, "float16"),
            _p2(2, 2, 16, 16, 3, 1, 1, "bfloat16")],
    "heldout": [_p2(1, 1, 3, 3, 3, 2, 1, "float32"), _p2(2, 5, 33, 17, 3, 2, 1, "float16"),
                _p2(3, 3, 28, 31, 5, 3, 2, "float32"), _p2(1, 2, 9, 14, 2, 2, 1, "bfloat16")],
    "bench": [_p2(128, 64, 112, 112, 3, 2, 1, "float16"), _p2(64, 128, 112, 112, 2, 2, 0, "float32")],
}

register(Task(
    id="pooling/max-pool2d",
    entrypoint="max_pool2d",
    signature="def max_pool2d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor",
    description="""
2-D max pooling, as torch.nn.functional.max_pool2d(x, kernel_size, stride, padding): x is a contiguous
(N, C, H, W) tensor (float32, float16 or bfloat16); each output element is the maximum of its window,
where padded positions never win (they count as -inf)."""
    + _WINDOW_RULES + "Return a new contiguous (N, C, OH, OW) tensor of x's dtype.\n",
    reference=lambda x, kernel_size, stride, padding: F.max_pool2d(x, kernel_size, stride, padding),
    make_inputs=_window2_inputs,
    shapes=_2D_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_MAX_TOL,
    flops=lambda c: _out2(c) * c["k"] * c["k"],
    bytes=lambda c: (_in2(c) + _out2(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))

register(Task(
    id="pooling/avg-pool2d",
    entrypoint="avg_pool2d",
    signature="def avg_pool2d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor",
    description="""
2-D average pooling, as torch.nn.functional.avg_pool2d(x, kernel_size, stride, padding) with its
defaults (count_include_pad=True): x is a contiguous (N, C, H, W) tensor (float32, float16 or bfloat16);
each output element is the sum of its window divided by kernel_size * kernel_size, padded positions
counting as zeros (also in windows that hang over the border)."""
    + _WINDOW_RULES + "Accumulate in float32; return a new contiguous (N, C, OH, OW) tensor of x's dtype.\n",
    reference=lambda x, kernel_size, stride, padding: F.avg_pool2d(x, kernel_size, stride, padding),
    make_inputs=_window2_inputs,
    shapes=_2D_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_AVG_TOL,
    flops=lambda c: _out2(c) * (c["k"] * c["k"] + 1),
    bytes=lambda c: (_in2(c) + _out2(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


def _max_pool_indices_ref(x, kernel_size, stride, padding):
    return F.max_pool2d(x, kernel_size, stride, padding, return_indices=True)


def _max_pool_indices_inputs(case, s):
    """A case's ``grid`` rounds x to its multiples: windows then tie for the maximum often (N(0, 1) values
    in float16 tie in a handful of windows at most), so the tie rule is checked where it matters."""
    inputs = _window2_inputs(case, s)
    if "grid" in case:
        x = inputs["x"]
        inputs["x"] = (torch.round(x.float() / case["grid"]) * case["grid"]).to(x.dtype)
    return inputs


register(Task(
    id="pooling/max-pool2d-indices",
    entrypoint="max_pool2d_with_indices",
    signature=(
        "def max_pool2d_with_indices(x: torch.Tensor, kernel_size: int, stride: int, padding: int"
        ") -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
2-D max pooling that also returns where each maximum came from, as
torch.nn.functional.max_pool2d(x, kernel_size, stride, padding, return_indices=True): x is a contiguous
(N, C, H, W) tensor (float32 or float16). Return (values, indices): values[n, c, i, j] is the maximum of
the window (padded positions never win) and indices[n, c, i, j] the int64 position h * W + w of that
maximum inside its own (H, W) plane. When several elements of a window tie for the maximum (fp16 inputs
do tie), the smallest index wins."""
    + _WINDOW_RULES + "Both outputs are new contiguous (N, C, OH, OW) tensors.\n",
    reference=_max_pool_indices_ref,
    make_inputs=_max_pool_indices_inputs,
    shapes={
        "dev": [_p2(2, 3, 10, 10, 3, 2, 1, "float32"), _p2(1, 4, 32, 32, 2, 2, 0, "float16"),
                _p2(2, 2, 16, 16, 3, 1, 1, "float16")],
        "heldout": [_p2(1, 1, 3, 3, 3, 2, 1, "float32"), _p2(2, 5, 33, 17, 3, 2, 1, "float16"),
                    _p2(3, 3, 28, 31, 5, 3, 2, "float32"),
                    _p2(2, 3, 20, 20, 3, 1, 1, "float16") | {"grid": 0.5}],  # ties in most windows
        "bench": [_p2(128, 64, 112, 112, 3, 2, 1, "float16"), _p2(64, 128, 112, 112, 2, 2, 0, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances=_MAX_TOL,
    flops=lambda c: _out2(c) * c["k"] * c["k"],
    bytes=lambda c: _in2(c) * elem_size(c["dtype"]) + _out2(c) * (elem_size(c["dtype"]) + 8),
    distributions=_DISTS,
))


def _global_avg_inputs(case, s):
    return {"x": s.tensor((case["n"], case["c"], case["h"], case["w"]), case["dtype"])}


def _nchw(n: int, c: int, h: int, w: int, dtype: str) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "dtype": dtype}


register(Task(
    id="pooling/global-avg-pool",
    entrypoint="global_avg_pool",
    signature="def global_avg_pool(x: torch.Tensor) -> torch.Tensor",
    description="""
Global average pooling, as x.mean(dim=(2, 3)) (adaptive_avg_pool2d(x, 1) flattened): x is a contiguous
(N, C, H, W) tensor (float32, float16 or bfloat16); out[n, c] is the mean of the H * W plane x[n, c].
Accumulate in float32 (planes reach 10^4 elements and inputs include a large mean of about 50);
return a new contiguous (N, C) tensor of x's dtype.
""",
    reference=lambda x: x.mean(dim=(2, 3)),
    make_inputs=_global_avg_inputs,
    shapes={
        "dev": [_nchw(2, 3, 7, 7, "float32"), _nchw(4, 64, 14, 14, "float16"), _nchw(2, 8, 8, 8, "bfloat16")],
        "heldout": [_nchw(1, 1, 1, 1, "float32"), _nchw(3, 33, 56, 57, "float32"),
                    _nchw(2, 100, 7, 7, "float16"),
                    _nchw(1, 5, 100, 100, "float32"), _nchw(2, 9, 5, 3, "bfloat16")],
        "bench": [_nchw(256, 2048, 14, 14, "float16"), _nchw(128, 256, 56, 56, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={**_AVG_TOL, "float32": Tolerance(1e-5, 2e-5, 2e-6, "a mean of up to 10^4 values of size ~50: "
                                                 "fp32 summation error ~1e-6 relative")},
    flops=lambda c: _in2(c),
    bytes=lambda c: (_in2(c) + c["n"] * c["c"]) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


def _adaptive_inputs(case, s):
    return {"x": s.tensor((case["n"], case["c"], case["h"], case["w"]), case["dtype"]),
            "out_h": case["oh"], "out_w": case["ow"]}


def _ad(n: int, c: int, h: int, w: int, oh: int, ow: int, dtype: str) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "oh": oh, "ow": ow, "dtype": dtype}


register(Task(
    id="pooling/adaptive-avg-pool2d",
    entrypoint="adaptive_avg_pool2d",
    signature="def adaptive_avg_pool2d(x: torch.Tensor, out_h: int, out_w: int) -> torch.Tensor",
    description="""
Adaptive 2-D average pooling, as torch.nn.functional.adaptive_avg_pool2d(x, (out_h, out_w)): x is a
contiguous (N, C, H, W) tensor (float32, float16 or bfloat16). Output row i averages input rows
floor(i * H / out_h) <= h < ceil((i + 1) * H / out_h), and likewise for columns with W and out_w; the
windows differ in size and may overlap when H is not a multiple of out_h (out_h may exceed H).
Accumulate in float32; return a new contiguous (N, C, out_h, out_w) tensor of x's dtype.
""",
    reference=lambda x, out_h, out_w: F.adaptive_avg_pool2d(x, (out_h, out_w)),
    make_inputs=_adaptive_inputs,
    shapes={
        "dev": [_ad(2, 3, 10, 10, 3, 3, "float32"), _ad(1, 8, 32, 32, 7, 5, "float16"),
                _ad(2, 4, 16, 12, 4, 4, "bfloat16")],
        "heldout": [_ad(1, 1, 1, 1, 1, 1, "float32"), _ad(2, 5, 33, 17, 6, 6, "float16"),
                    _ad(3, 3, 7, 9, 10, 4, "float32"), _ad(1, 2, 50, 50, 7, 7, "bfloat16")],
        "bench": [_ad(128, 256, 56, 56, 7, 7, "float16"), _ad(128, 512, 33, 33, 6, 6, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_AVG_TOL,
    flops=lambda c: _in2(c) + c["n"] * c["c"] * c["oh"] * c["ow"],
    bytes=lambda c: (_in2(c) + c["n"] * c["c"] * c["oh"] * c["ow"]) * elem_size(c["dtype"]),
    distributions=_DISTS,
))

_1D_RULES = """
Windows of kernel_size elements, moved by stride, over the input padded by `padding` on both ends
(padding <= kernel_size // 2); the output is (N, C, OL) with OL = (L + 2 * padding - kernel_size) //
stride + 1 (floor).
"""

_1D_SHAPES = {
    "dev": [_p1(2, 3, 50, 3, 2, 1, "float32"), _p1(1, 16, 1000, 4, 4, 0, "float16"),
            _p1(2, 4, 64, 5, 1, 2, "bfloat16")],
    "heldout": [_p1(1, 1, 1, 1, 1, 0, "float32"), _p1(2, 5, 333, 3, 2, 1, "float16"),
                _p1(3, 7, 1001, 7, 3, 3, "float32"), _p1(1, 3, 77, 2, 2, 1, "bfloat16")],
    "bench": [_p1(64, 512, 16384, 3, 2, 1, "float16"), _p1(32, 256, 32768, 4, 4, 0, "float32")],
}

register(Task(
    id="pooling/max-pool1d",
    entrypoint="max_pool1d",
    signature="def max_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor",
    description="""
1-D max pooling, as torch.nn.functional.max_pool1d(x, kernel_size, stride, padding): x is a contiguous
(N, C, L) tensor (float32, float16 or bfloat16); each output element is the maximum of its window,
where padded positions never win."""
    + _1D_RULES + "Return a new contiguous (N, C, OL) tensor of x's dtype.\n",
    reference=lambda x, kernel_size, stride, padding: F.max_pool1d(x, kernel_size, stride, padding),
    make_inputs=_window1_inputs,
    shapes=_1D_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_MAX_TOL,
    flops=lambda c: _out1(c) * c["k"],
    bytes=lambda c: (c["n"] * c["c"] * c["l"] + _out1(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))

register(Task(
    id="pooling/avg-pool1d",
    entrypoint="avg_pool1d",
    signature="def avg_pool1d(x: torch.Tensor, kernel_size: int, stride: int, padding: int) -> torch.Tensor",
    description="""
1-D average pooling, as torch.nn.functional.avg_pool1d(x, kernel_size, stride, padding) with its default
count_include_pad=True: x is a contiguous (N, C, L) tensor (float32, float16 or bfloat16); each output
element is the sum of its window divided by kernel_size, padded positions counting as zeros."""
    + _1D_RULES + "Accumulate in float32; return a new contiguous (N, C, OL) tensor of x's dtype.\n",
    reference=lambda x, kernel_size, stride, padding: F.avg_pool1d(x, kernel_size, stride, padding),
    make_inputs=_window1_inputs,
    shapes=_1D_SHAPES,
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_AVG_TOL,
    flops=lambda c: _out1(c) * (c["k"] + 1),
    bytes=lambda c: (c["n"] * c["c"] * c["l"] + _out1(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))


def _lp_inputs(case, s):
    return {"x": s.tensor((case["n"], case["c"], case["h"], case["w"]), case["dtype"]),
            "norm_type": case["norm"], "kernel_size": case["k"], "stride": case["s"]}


def _lp(n: int, c: int, h: int, w: int, k: int, s: int, norm: float, dtype: str) -> dict:
    return {**_p2(n, c, h, w, k, s, 0, dtype), "norm": norm}


register(Task(
    id="pooling/lp-pool2d",
    entrypoint="lp_pool2d",
    signature=(
        "def lp_pool2d(x: torch.Tensor, norm_type: float, kernel_size: int, stride: int) -> torch.Tensor"
    ),
    description="""
2-D power-average pooling, as torch.nn.functional.lp_pool2d(x, norm_type, kernel_size, stride): x is a
contiguous (N, C, H, W) tensor (float32 or float16) and norm_type an even number (2.0 or 4.0);
out[n, c, i, j] = (sum over the kernel_size x kernel_size window of x^norm_type)^(1 / norm_type), windows
starting at (i * stride, j * stride), no padding, OH = (H - kernel_size) // stride + 1 and likewise OW.
Accumulate in float32 (x^4 of outliers overflows fp16); return a new contiguous (N, C, OH, OW) tensor of
x's dtype.
""",
    reference=lambda x, norm_type, kernel_size, stride: F.lp_pool2d(x, norm_type, kernel_size, stride),
    make_inputs=_lp_inputs,
    shapes={
        "dev": [_lp(2, 3, 10, 10, 3, 2, 2.0, "float32"), _lp(1, 4, 32, 32, 2, 2, 4.0, "float16"),
                _lp(2, 2, 16, 16, 3, 1, 2.0, "float16")],
        "heldout": [_lp(1, 1, 3, 3, 3, 2, 2.0, "float32"), _lp(2, 5, 33, 17, 3, 2, 4.0, "float32"),
                    _lp(3, 3, 28, 31, 5, 3, 2.0, "float16")],
        "bench": [_lp(128, 64, 112, 112, 3, 2, 2.0, "float16"), _lp(64, 128, 112, 112, 2, 2, 4.0, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-5, 2e-5, 2e-6, "a sum of powers and one root: a few fp32 ulps"),
        "float16": Tolerance(1e-3, 2e-3, 1e-3, "fp16 output rounding (4.9e-4 relative)"),
    },
    flops=lambda c: _out2(c) * (2 * c["k"] * c["k"] + 2),
    bytes=lambda c: (_in2(c) + _out2(c)) * elem_size(c["dtype"]),
    distributions=_DISTS,
))
