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
            {"m": 2, "n": 70001, "dtype": "float32"},  # past 64K: a row of several blocks, combined
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


def _shifted(case, s, shape):
    """x of the distribution, times the case's ``scale`` plus its ``offset``: an offset of 1200 on N(0, 1)
    rows puts mean/std above 1e3, where E[x^2] - E[x]^2 in float32 loses the whole variance; a scale of
    1e-3 makes the variance (1e-6) small against eps (1e-5), where eps under or outside the root differ."""
    return s.tensor(shape, case["dtype"], scale=case.get("scale", 1.0), offset=case.get("offset", 0.0))


_SHIFTED = [{"m": 4, "n": 300, "dtype": "float16", "offset": 1200.0},
            {"m": 5, "n": 200, "dtype": "float32", "offset": 100.0},
            {"m": 3, "n": 257, "dtype": "float32", "scale": 1e-3}]
"""Cases whose rows have a large mean against their spread (float16 at 1200: mean/std ~1e3; a two-pass
kernel stays within fp16's rounding, the one-pass form is off by 20%; float32 at 100, mean/std ~100, as
far as a two-pass float32 kernel stays within 1e-4 (its error grows as 1.2e-7 * mean/std)), or a variance
below eps."""


def _layer_norm_inputs(case, s):
    n = case["n"]
    return {
        "x": _shifted(case, s, (case["m"], n)),
        "weight": s.normal((n,), case["dtype"], mean=1.0, std=0.5),
        "bias": s.normal((n,), case["dtype"], std=0.5),
        "eps": case.get("eps", 1e-5),
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
Accumulate in float32. Inputs include rows with a large mean against their spread (mean/std up to
~1e3), where the one-pass E[x^2] - E[x]^2 formula loses the whole variance, rows whose variance is
below eps, and N = 1 (the output is then the bias).
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
            *_SHIFTED,
            {"m": 4, "n": 100, "dtype": "float32", "eps": 0.1},  # eps not the default: a constant fails
        ],
        "bench": [
            {"m": 16384, "n": 8192, "dtype": "float16"},
            {"m": 8192, "n": 4096, "dtype": "float32"},
        ],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-4, 1e-4, 1e-5, "outputs O(1); mean and variance reorderings cost ~1e-6"),
        "float16": Tolerance(4e-3, 1e-2, 2e-3,
                             "fp16 output rounding (5e-4 relative) times |weight| up to ~3"),
    },
    flops=lambda c: 8 * c["m"] * c["n"],
    bytes=lambda c: (2 * c["m"] * c["n"] + 2 * c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


# ----------------------------------------------------------------------------------------------------
# Shared pieces of the tasks below.

def _rows(m: int, n: int, dtype: str) -> dict:
    return {"m": m, "n": n, "dtype": dtype}


_SOFTMAX_TOL = {
    "float32": Tolerance(1e-6, 1e-4, 1e-5, "outputs in [0, 1]; one exp and one division per element"),
    "float16": Tolerance(1e-4, 1e-2, 2e-3, "fp16 output rounding dominates (5e-4 relative)"),
    "bfloat16": Tolerance(1e-3, 3e-2, 1e-2, "bf16 output rounding dominates (4e-3 relative)"),
}
_NORM_TOL = {
    "float32": Tolerance(1e-4, 1e-4, 1e-5, "outputs O(1); mean and variance reorderings cost ~1e-6"),
    "float16": Tolerance(4e-3, 1e-2, 2e-3, "fp16 output rounding (5e-4 relative) times |weight| up to ~3"),
    "bfloat16": Tolerance(3e-2, 3e-2, 1e-2, "bf16 output rounding (4e-3 relative) times |weight| up to ~3"),
}


def _rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rms_norm_inputs(case, s):
    n = case["n"]
    return {
        "x": s.tensor((case["m"], n), case["dtype"], scale=case.get("scale", 1.0)),
        "weight": s.normal((n,), case["dtype"], mean=1.0, std=0.5),
        "eps": case.get("eps", 1e-6),
    }


register(Task(
    id="normalization/rms-norm",
    entrypoint="rms_norm",
    signature="def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor",
    description="""
RMS normalization over the last dimension (as in Llama): x is a contiguous (M, N) tensor and weight
is (N,); for each row, out = x / sqrt(mean(x^2) + eps) * weight, the mean taken over the N elements.
x and weight share one dtype, float32, float16 or bfloat16; return a new (M, N) tensor of that
dtype. Accumulate in float32 (the squares of fp16 values overflow fp16). Inputs include rows with
a large mean (about 50) and rows with outliers of several hundred.
""",
    reference=_rms_norm_ref,
    make_inputs=_rms_norm_inputs,
    shapes={
        "dev": [_rows(4, 100, "float32"), _rows(16, 768, "float16"), _rows(8, 1024, "bfloat16")],
        "heldout": [_rows(3, 1, "float32"), _rows(33, 1537, "float16"), _rows(64, 4095, "float32"),
                    _rows(17, 2049, "bfloat16"),
                    # mean(x^2) = 1e-8 against eps = 1e-6: eps under the root or beside it differ by 10x
                    _rows(3, 257, "float32") | {"scale": 1e-4},
                    # eps = 10 against mean(x^2) up to ~2600 (the large distribution): a constant eps fails
                    _rows(4, 100, "float32") | {"eps": 10.0}],
        "bench": [_rows(16384, 8192, "bfloat16"), _rows(16384, 8192, "float16"),
                  _rows(8192, 4096, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NORM_TOL,
    flops=lambda c: 4 * c["m"] * c["n"],
    bytes=lambda c: (2 * c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _add_rms_norm_ref(x, residual, weight, eps=1e-6):
    h = x + residual
    return _rms_norm_ref(h, weight, eps), h


def _add_rms_norm_inputs(case, s):
    n = case["n"]
    return {
        "x": s.tensor((case["m"], n), case["dtype"]),
        "residual": s.tensor((case["m"], n), case["dtype"]),
        "weight": s.normal((n,), case["dtype"], mean=1.0, std=0.5),
        "eps": case.get("eps", 1e-6),
    }


register(Task(
    id="normalization/add-rms-norm",
    entrypoint="add_rms_norm",
    signature=(
        "def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, "
        "eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]"
    ),
    description="""
Residual add followed by RMS normalization, the fused step between transformer blocks:
x and residual are contiguous (M, N) tensors, weight is (N,); h = x + residual, and for each row
out = h / sqrt(mean(h^2) + eps) * weight (mean over the N elements). Return the tuple (out, h):
two new (M, N) tensors of the input dtype (float32, float16 or bfloat16); do not modify x or
residual. Accumulate in float32; normalizing h before or after rounding it to the input dtype
are both accepted.
""",
    reference=_add_rms_norm_ref,
    make_inputs=_add_rms_norm_inputs,
    shapes={
        "dev": [_rows(4, 100, "float32"), _rows(16, 768, "float16"), _rows(8, 1024, "bfloat16")],
        "heldout": [_rows(3, 1, "float32"), _rows(33, 1537, "float16"), _rows(64, 4095, "float32"),
                    _rows(17, 2049, "bfloat16"),
                    # eps = 50 against mean(h^2) up to ~1e4 (the large distribution): a constant eps fails
                    _rows(4, 100, "float32") | {"eps": 50.0}],
        "bench": [_rows(16384, 8192, "bfloat16"), _rows(16384, 8192, "float16")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances=_NORM_TOL,
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: (4 * c["m"] * c["n"] + c["n"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


register(Task(
    id="normalization/log-softmax",
    entrypoint="log_softmax",
    signature="def log_softmax(x: torch.Tensor) -> torch.Tensor",
    description="""
Log-softmax over the last dimension of a contiguous (M, N) tensor x:
out[i, j] = x[i, j] - max_k x[i, k] - log(sum_k exp(x[i, k] - max_k x[i, k])).
x is float32 or float16; return a new tensor of the same shape and dtype. Accumulate in float32.
Inputs include values around 50 and outliers of several hundred, where exp overflows without the
max subtraction, and rows dominated by one element (outputs near 0 next to outputs near -500).
""",
    reference=lambda x: torch.log_softmax(x, dim=-1),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [_rows(4, 100, "float32"), _rows(8, 1000, "float16"), _rows(3, 2048, "float32")],
        "heldout": [_rows(1, 1, "float32"), _rows(17, 3001, "float16"), _rows(64, 781, "float32"),
                    _rows(2, 32000, "float32")],
        "bench": [_rows(16384, 8192, "float16"), _rows(4096, 32000, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(2e-5, 1e-5, 1e-6, "outputs up to |500|: a few fp32 ulps of x - max - log(sum)"),
        "float16": Tolerance(2e-3, 1e-3, 1e-3,
                             "fp16 output rounding: 4.9e-4 relative, outputs near 0 absolute"),
    },
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


register(Task(
    id="normalization/softmax-temperature",
    entrypoint="softmax_temperature",
    signature="def softmax_temperature(x: torch.Tensor, temperature: float) -> torch.Tensor",
    description="""
Softmax with a temperature over the last dimension, as used when sampling from logits:
out = softmax(x / temperature, dim=-1) for a contiguous (M, N) tensor x and a Python float
temperature > 0 (from 0.1 to 4). x is float32 or float16; return a new tensor of the same shape
and dtype. Accumulate in float32. A small temperature sharpens rows into a near one-hot output,
and x / temperature then reaches several thousand: subtract the row maximum.
""",
    reference=lambda x, temperature: torch.softmax(x / temperature, dim=-1),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"]),
                                 "temperature": case["t"]},
    shapes={
        "dev": [{**_rows(4, 100, "float32"), "t": 0.7}, {**_rows(8, 1000, "float16"), "t": 2.0},
                {**_rows(3, 2048, "float32"), "t": 0.1}],
        "heldout": [{**_rows(1, 1, "float32"), "t": 0.5}, {**_rows(17, 3001, "float16"), "t": 0.25},
                    {**_rows(64, 781, "float32"), "t": 4.0}, {**_rows(5, 50257, "float32"), "t": 0.8}],
        "bench": [{**_rows(8192, 32000, "float16"), "t": 0.7}, {**_rows(4096, 50257, "float32"), "t": 1.3}],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-6, 5e-4, 5e-5, "x / T reaches ~4e3, where an fp32 ulp of the exponent "
                             "(2.4e-4) becomes a relative error of the output"),
        "float16": Tolerance(1e-4, 1e-2, 2e-3, "fp16 output rounding dominates (5e-4 relative)"),
    },
    flops=lambda c: 6 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _masked_softmax_ref(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    y = torch.softmax(x.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.where(mask.any(dim=-1, keepdim=True), y, torch.zeros((), dtype=y.dtype, device=y.device))


def _masked_softmax_inputs(case, s):
    m, n = case["m"], case["n"]
    mask = s.uniform((m, n)) < case["keep"]
    mask[0] = False  # a fully masked row: its output must be zeros, not NaN
    if m > 2:
        mask[1] = False
        mask[1, n // 2] = True  # a row with one kept element: its output is exactly one-hot
    return {"x": s.tensor((m, n), case["dtype"]), "mask": mask}


register(Task(
    id="normalization/masked-softmax",
    entrypoint="masked_softmax",
    signature="def masked_softmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor",
    description="""
Softmax over the last dimension of a contiguous (M, N) tensor x restricted to the positions where
the boolean (M, N) tensor mask is True:
out[i, j] = exp(x[i, j] - m_i) / sum_{k: mask[i, k]} exp(x[i, k] - m_i) where mask[i, j] is True, with
m_i the maximum over the kept positions of row i, and out[i, j] = 0 where mask[i, j] is False. A row
with no kept position is all zeros (not NaN). x is float32 or float16; return a new tensor of the same
shape and dtype. Accumulate in float32.
""",
    reference=_masked_softmax_ref,
    make_inputs=_masked_softmax_inputs,
    shapes={
        "dev": [{**_rows(4, 100, "float32"), "keep": 0.5}, {**_rows(8, 1000, "float16"), "keep": 0.9},
                {**_rows(5, 2048, "float32"), "keep": 0.1}],
        "heldout": [{**_rows(1, 1, "float32"), "keep": 0.5}, {**_rows(17, 3001, "float16"), "keep": 0.3},
                    {**_rows(64, 781, "float32"), "keep": 0.7},
                    {**_rows(2, 20001, "float32"), "keep": 0.5}],  # rows of several blocks: rescaled sums
        "bench": [{**_rows(16384, 8192, "float16"), "keep": 0.5},
                  {**_rows(8192, 8191, "float32"), "keep": 0.8}],
    },
    dtypes=("float32", "float16"),
    tolerances=_SOFTMAX_TOL,
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: c["m"] * c["n"] * (2 * elem_size(c["dtype"]) + 1),
    distributions=("normal", "large", "outliers"),
))


register(Task(
    id="normalization/softmax-dim0",
    entrypoint="softmax_dim0",
    signature="def softmax_dim0(x: torch.Tensor) -> torch.Tensor",
    description="""
Softmax over the FIRST dimension of a contiguous (M, N) tensor x, i.e. down each column:
out[i, j] = exp(x[i, j] - max_k x[k, j]) / sum_k exp(x[k, j] - max_k x[k, j]), as torch.softmax(x, dim=0).
x is float32 or float16; return a new contiguous tensor of the same shape and dtype. Accumulate in
float32. M can be a few thousand and N small, or the reverse: reading a column element by element
wastes bandwidth, so programs should cover many adjacent columns at once.
""",
    reference=lambda x: torch.softmax(x, dim=0),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [_rows(100, 37, "float32"), _rows(1000, 64, "float16"), _rows(7, 300, "float32")],
        "heldout": [_rows(1, 5, "float32"), _rows(3001, 17, "float16"), _rows(257, 1000, "float32")],
        "bench": [_rows(8192, 16384, "float16"), _rows(32768, 4096, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances=_SOFTMAX_TOL,
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


register(Task(
    id="normalization/softmax-long-row",
    entrypoint="softmax_long_row",
    signature="def softmax_long_row(x: torch.Tensor) -> torch.Tensor",
    description="""
Softmax over the last dimension of a contiguous (M, N) tensor x with FEW, VERY LONG rows (M from 1 to
8, N up to 2^26), as in a softmax over a whole vocabulary or sequence: out[i, j] = exp(x[i, j] - max_k
x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k]). x is float32 or float16; return a new tensor of the same
shape and dtype. Accumulate in float32. One program per row leaves almost all of the GPU idle: split
each row over many programs and combine their partial maxima and sums (online softmax).
""",
    reference=lambda x: torch.softmax(x, dim=-1),
    make_inputs=lambda case, s: {"x": s.tensor((case["m"], case["n"]), case["dtype"])},
    shapes={
        "dev": [_rows(1, 100000, "float32"), _rows(2, 70001, "float16"), _rows(4, 5000, "float32")],
        "heldout": [_rows(1, 1, "float32"), _rows(3, 262147, "float32"), _rows(5, 40001, "float16")],
        "bench": [_rows(4, 1 << 26, "float32"), _rows(8, 1 << 26, "float16")],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-9, 1e-4, 1e-5, "outputs ~1/N, down to 1e-8: the bound must be relative"),
        "float16": Tolerance(1e-7, 1e-2, 2e-3, "fp16 output rounding (5e-4 relative); outputs near fp16's"
                             " subnormal range"),
    },
    flops=lambda c: 5 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _l2_normalize_inputs(case, s):
    x = s.tensor((case["m"], case["n"]), case["dtype"])
    if case["m"] > 1:
        x[-1] = 0  # a zero row: the eps floor keeps the output 0 instead of 0/0
    return {"x": x, "eps": case.get("eps", 1e-12)}


register(Task(
    id="normalization/l2-normalize",
    entrypoint="l2_normalize",
    signature="def l2_normalize(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor",
    description="""
L2-normalize each row of a contiguous (M, N) tensor x, as torch.nn.functional.normalize(x, p=2, dim=-1,
eps=eps): out[i, :] = x[i, :] / max(||x[i, :]||_2, eps). x is float32 or float16; return a new tensor
of the same shape and dtype. Accumulate the sum of squares in float32 (it overflows fp16). Some rows
are entirely zero; their output is zero.
""",
    reference=lambda x, eps=1e-12: F.normalize(x, p=2.0, dim=-1, eps=eps),
    make_inputs=_l2_normalize_inputs,
    shapes={
        "dev": [_rows(4, 100, "float32"), _rows(16, 768, "float16"), _rows(5, 1000, "float32")],
        "heldout": [_rows(3, 1, "float32"), _rows(33, 1537, "float16"), _rows(128, 4095, "float32"),
                    # eps = 20 above the norms of N(0, 1) rows (~10): a kernel with a constant eps fails
                    _rows(4, 100, "float32") | {"eps": 20.0}],
        "bench": [_rows(65536, 4096, "float16"), _rows(32768, 4096, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-7, 1e-5, 1e-6, "outputs ~1/sqrt(N): one sqrt and a division, a few ulps"),
        "float16": Tolerance(1e-5, 2e-3, 1e-3, "fp16 output rounding (4.9e-4 relative)"),
    },
    flops=lambda c: 3 * c["m"] * c["n"],
    bytes=lambda c: 2 * c["m"] * c["n"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _bsd(b: int, t: int, d: int, dtype: str) -> dict:
    return {"b": b, "t": t, "d": d, "dtype": dtype}


register(Task(
    id="normalization/layer-norm-no-affine",
    entrypoint="layer_norm_no_affine",
    signature="def layer_norm_no_affine(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor",
    description="""
Layer normalization without weight and bias over the last dimension of a contiguous (B, T, D)
tensor x, as torch.nn.functional.layer_norm(x, (D,), eps=eps): for each of the B*T rows,
out = (x - mean) / sqrt(var + eps) with the biased variance (divide by D). x is float32, float16 or
bfloat16; return a new (B, T, D) tensor of that dtype. Accumulate in float32. Rows with a large mean
(about 50) break the one-pass E[x^2] - E[x]^2 formula.
""",
    reference=lambda x, eps=1e-5: F.layer_norm(x, (x.shape[-1],), eps=eps),
    make_inputs=lambda case, s: {"x": _shifted(case, s, (case["b"], case["t"], case["d"])),
                                 "eps": case.get("eps", 1e-5)},
    shapes={
        "dev": [_bsd(2, 3, 100, "float32"), _bsd(2, 8, 768, "float16"), _bsd(1, 4, 512, "bfloat16")],
        "heldout": [_bsd(1, 3, 1, "float32"), _bsd(3, 11, 1537, "float16"), _bsd(2, 40, 4095, "float32"),
                    _bsd(2, 5, 333, "bfloat16"),
                    *({"b": 1, "t": c["m"], "d": c["n"]} | {k: v for k, v in c.items() if k not in "mn"}
                      for c in _SHIFTED),
                    _bsd(2, 3, 100, "float32") | {"eps": 0.1}],  # eps not the default: a constant fails
        "bench": [_bsd(8, 4096, 4096, "bfloat16"), _bsd(8, 4096, 4096, "float16"),
                  _bsd(4, 4096, 4096, "float32")],
    },
    dtypes=("float32", "float16", "bfloat16"),
    tolerances={
        "float32": Tolerance(1e-4, 1e-4, 1e-5, "outputs O(1); mean and variance reorderings cost ~1e-6"),
        "float16": Tolerance(2e-3, 1e-2, 2e-3, "fp16 output rounding (5e-4 relative) of outputs up to ~40"),
        "bfloat16": Tolerance(2e-2, 3e-2, 1e-2, "bf16 output rounding (4e-3 relative)"),
    },
    flops=lambda c: 7 * c["b"] * c["t"] * c["d"],
    bytes=lambda c: 2 * c["b"] * c["t"] * c["d"] * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _nchw(n: int, c: int, h: int, w: int, dtype: str, **extra) -> dict:
    return {"n": n, "c": c, "h": h, "w": w, "dtype": dtype, **extra}


def _numel(c) -> int:
    return c["n"] * c["c"] * c["h"] * c["w"]


def _group_norm_inputs(case, s):
    ch = case["c"]
    return {
        "x": _shifted(case, s, (case["n"], ch, case["h"], case["w"])),
        "num_groups": case["g"],
        "weight": s.normal((ch,), case["dtype"], mean=1.0, std=0.5),
        "bias": s.normal((ch,), case["dtype"], std=0.5),
        "eps": case.get("eps", 1e-5),
    }


register(Task(
    id="normalization/group-norm",
    entrypoint="group_norm",
    signature=(
        "def group_norm(x: torch.Tensor, num_groups: int, weight: torch.Tensor, bias: torch.Tensor, "
        "eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Group normalization, as torch.nn.functional.group_norm(x, num_groups, weight, bias, eps): x is a
contiguous (N, C, H, W) tensor, C is divisible by num_groups, weight and bias are (C,). The C channels
are split into num_groups groups of C / num_groups consecutive channels; for each sample n and group g,
the mean and biased variance are taken over the group's (C / num_groups) * H * W elements, and
out[n, c, h, w] = (x[n, c, h, w] - mean) / sqrt(var + eps) * weight[c] + bias[c].
x, weight and bias share one dtype, float32 or float16; return a new (N, C, H, W) tensor of that
dtype. Accumulate in float32; inputs include a large mean (about 50).
""",
    reference=lambda x, num_groups, weight, bias, eps=1e-5: F.group_norm(x, num_groups, weight, bias, eps),
    make_inputs=_group_norm_inputs,
    shapes={
        "dev": [_nchw(2, 8, 5, 7, "float32", g=4), _nchw(1, 32, 16, 16, "float16", g=8),
                _nchw(2, 6, 9, 9, "float32", g=1)],
        "heldout": [_nchw(3, 6, 1, 2, "float32", g=3), _nchw(2, 64, 9, 13, "float16", g=32),
                    _nchw(1, 12, 33, 17, "float32", g=12),
                    # 3 channels a group (45 elements): a group tile padded to a power of two must be masked
                    _nchw(2, 15, 3, 5, "float32", g=5), _nchw(1, 6, 4, 5, "float16", g=3, offset=1200.0),
                    _nchw(2, 8, 5, 7, "float32", g=4, eps=0.1)],  # eps not the default: a constant fails
        "bench": [_nchw(64, 512, 64, 64, "float16", g=32), _nchw(32, 256, 64, 64, "float32", g=32)],
    },
    dtypes=("float32", "float16"),
    tolerances=_NORM_TOL,
    flops=lambda c: 8 * _numel(c),
    bytes=lambda c: (2 * _numel(c) + 2 * c["c"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _batch_norm_inputs(case, s):
    ch = case["c"]
    return {
        "x": s.tensor((case["n"], ch, case["h"], case["w"]), case["dtype"]),
        "running_mean": s.normal((ch,), case["dtype"], std=2.0),
        "running_var": s.uniform((ch,), 0.25, 4.0, case["dtype"]),
        "weight": s.normal((ch,), case["dtype"], mean=1.0, std=0.5),
        "bias": s.normal((ch,), case["dtype"], std=0.5),
        "eps": case.get("eps", 1e-5),
    }


register(Task(
    id="normalization/batch-norm",
    entrypoint="batch_norm",
    signature=(
        "def batch_norm(x: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor, "
        "weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Batch normalization in inference mode, as torch.nn.functional.batch_norm(x, running_mean, running_var,
weight, bias, training=False, eps=eps): x is a contiguous (N, C, H, W) tensor and the other tensors
are (C,); out[n, c, h, w] = (x[n, c, h, w] - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c]
+ bias[c]. The running statistics are given (do not compute batch statistics and do not update
them). All tensors share one dtype, float32 or float16; return a new (N, C, H, W) tensor of that
dtype, computing in float32.
""",
    reference=lambda x, running_mean, running_var, weight, bias, eps=1e-5: F.batch_norm(
        x, running_mean, running_var, weight, bias, training=False, eps=eps),
    make_inputs=_batch_norm_inputs,
    shapes={
        "dev": [_nchw(2, 3, 5, 7, "float32"), _nchw(4, 16, 8, 8, "float16"), _nchw(1, 64, 1, 1, "float32")],
        "heldout": [_nchw(1, 1, 1, 1, "float32"), _nchw(3, 40, 13, 11, "float16"),
                    _nchw(2, 96, 17, 9, "float32"),
                    _nchw(2, 3, 5, 7, "float32", eps=0.1)],  # eps not the default: a constant fails
        "bench": [_nchw(64, 256, 56, 56, "float16"), _nchw(32, 128, 112, 112, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances={
        "float32": Tolerance(1e-5, 1e-5, 1e-6,
                             "one affine map per element: a few fp32 ulps of outputs up to ~100"),
        "float16": Tolerance(2e-3, 2e-3, 1e-3, "fp16 output rounding (4.9e-4 relative)"),
    },
    flops=lambda c: 4 * _numel(c),
    bytes=lambda c: (2 * _numel(c) + 4 * c["c"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))


def _instance_norm_inputs(case, s):
    ch = case["c"]
    return {
        "x": _shifted(case, s, (case["n"], ch, case["h"], case["w"])),
        "weight": s.normal((ch,), case["dtype"], mean=1.0, std=0.5),
        "bias": s.normal((ch,), case["dtype"], std=0.5),
        "eps": case.get("eps", 1e-5),
    }


register(Task(
    id="normalization/instance-norm",
    entrypoint="instance_norm",
    signature=(
        "def instance_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, "
        "eps: float = 1e-5) -> torch.Tensor"
    ),
    description="""
Instance normalization, as torch.nn.functional.instance_norm(x, weight=weight, bias=bias, eps=eps):
x is a contiguous (N, C, H, W) tensor, weight and bias are (C,); each (n, c) plane of H * W elements
is normalized by its own mean and biased variance: out[n, c] = (x[n, c] - mean) / sqrt(var + eps) *
weight[c] + bias[c]. x, weight and bias share one dtype, float32 or float16; return a new tensor of
the shape and dtype of x. Accumulate in float32; inputs include a large mean (about 50). Planes can be
as small as two or three elements.
""",
    reference=lambda x, weight, bias, eps=1e-5: F.instance_norm(x, weight=weight, bias=bias, eps=eps),
    make_inputs=_instance_norm_inputs,
    shapes={
        "dev": [_nchw(2, 3, 10, 10, "float32"), _nchw(1, 4, 32, 33, "float16"),
                _nchw(2, 2, 7, 129, "float32")],
        "heldout": [_nchw(2, 5, 1, 3, "float32"), _nchw(3, 2, 64, 65, "float16"),
                    _nchw(1, 3, 10, 30, "float16", offset=1200.0),  # mean/std ~1e3 per channel
                    _nchw(1, 6, 17, 19, "float32"),
                    _nchw(2, 3, 10, 10, "float32", eps=0.1)],  # eps not the default: a constant fails
        "bench": [_nchw(16, 256, 128, 128, "float16"), _nchw(16, 128, 128, 128, "float32")],
    },
    dtypes=("float32", "float16"),
    tolerances=_NORM_TOL,
    flops=lambda c: 8 * _numel(c),
    bytes=lambda c: (2 * _numel(c) + 2 * c["c"]) * elem_size(c["dtype"]),
    distributions=("normal", "large", "outliers"),
))
